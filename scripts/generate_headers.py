"""Regenerate the headers written from the state descriptions: csrc/<prefix>_state.h of every learner that keeps a
state on the device, and edgestream/_engine_learners.h, the compiled host engine's table of them."""
from edgestream.learners import REGISTRY
from edgestream.state import engine_header, engine_header_path, runtime_header_path

states = [spec.state for spec in REGISTRY.values() if spec.state is not None]
for state in states:
    path = runtime_header_path(state)
    path.write_text(state.header())
    print(f"wrote {path}")
engine_header_path().write_text(engine_header(states))
print(f"wrote {engine_header_path()}")
