"""Regenerate csrc/<prefix>_state.h of every learner that keeps a state on the device, from its description."""
from edgestream.learners import REGISTRY
from edgestream.state import runtime_header_path

for spec in REGISTRY.values():
    if spec.state is not None:
        path = runtime_header_path(spec.state)
        path.write_text(spec.state.header())
        print(f"wrote {path}")
