"""State images: a learning bundle's state saved on the device (flash, EEPROM) and read or written on the host.

The format is in ``csrc/es_image.h``: a 24-byte header (magic ``ESIM``, format version, the model hash, a
sequence number, the payload length, a CRC-32 of header and payload) and the payload. The payload's layout
(:func:`image_layout`) follows from the learner's state description alone: every region except the scratch ones
(their contents never outlive a call), in the state's order, each at an offset aligned to its element (at most 4),
then the counters one field at a time, each aligned to its size, and zero padding to a multiple of 4. All values
little-endian, as on every supported target. So the generated C (``codegen/checkpoint.c.j2``) and this module
write the same bytes, and the image of an AVR device reads on a Cortex-M or on the host.

The model hash (:func:`model_hash`) is a CRC-32 of the exported model's constants: learner, configuration,
input type, features, classes, bin edges and the image layout, so an image never restores into another model.
It does not depend on the learned state: any export of the same model (before or after more learning) reads the
images of any other.

Decisions:

* Validation: a state image is checked whole before the running state changes: header, CRC-32, model hash,
  then the learner's ``es_<learner>_validate`` on a candidate whose region pointers point *into the image*
  (no second copy of the state in RAM; this is why images must be 4-byte aligned, ``ES_ERR_SIZE`` otherwise),
  with the counters copied to a local struct. On the host, :func:`read_image` checks the same header and hands
  the regions to the learner's ``restore_arrays`` (its own validation, the specification).
* Derived regions (group ``cache``: what a learner recomputes from the rest, e.g. the shrubs' sorted lists and
  Gram sums) are not in the image: after a restore or a reset the device recomputes them
  (``<prefix>_rebuild``, required of a learner whose state has a cache), as the host's ``restore_arrays`` does.
  So an image depends on the learned state only (not on stale cache entries of dropped shrubs): the host's
  image of a model file equals the device's image of the same state, byte for byte, and the validation need
  not trust any cached index.
* Sequence numbers: ``NAME_save`` numbers images 1, 2, ... from the last restored image; ``NAME_reset`` keeps
  the number, so an image saved after a reset is newer than the slots' images. With two slots, an image of odd
  sequence goes to slot A and of even sequence to slot B: the write never touches the newest image.
"""

from __future__ import annotations

import copy
import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import learners
from .ranges import Range
from .state import C_TYPES, StateLayout, c_scalar
from .task import output_context

SEQUENCE = Range("sequence", 0, 0xFFFFFFFF)  # an image's sequence number (uint32)

MAGIC = b"ESIM"
IMAGE_VERSION = 2  # 2: 64-bit n_learned (bls, hoeffding, irf), the BLS factor bounds in the config
HEADER_BYTES = 24
# Region groups an image leaves out: scratch (meaningless between calls) and cache (derived from the rest; the
# learner's C module recomputes it with ``<prefix>_rebuild`` after a restore, as its restore_arrays does).
UNSAVED_GROUPS = ("scratch", "cache")
_HEADER = struct.Struct("<4sHHIIII")


@dataclass(frozen=True)
class Slot:
    """One member of the payload: a region (``count`` elements of ``c_type``) or a counter (count 1)."""

    name: str
    c_type: str
    count: int
    offset: int
    counter: bool = False

    @property
    def bytes(self) -> int:
        return C_TYPES[self.c_type][0] * self.count

    @property
    def dtype(self) -> np.dtype:
        return C_TYPES[self.c_type][2]


@dataclass(frozen=True)
class ImageLayout:
    slots: tuple[Slot, ...]
    payload_bytes: int

    @property
    def image_bytes(self) -> int:
        return HEADER_BYTES + self.payload_bytes

    @property
    def regions(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if not s.counter)

    @property
    def counters(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.counter)


def image_layout(layout: StateLayout) -> ImageLayout:
    """Offsets (from the payload's start) of every saved region and counter of a state layout."""
    slots, offset = [], 0
    members = [(r.name, r.c_type, r.count, False) for r in layout.regions if r.group not in UNSAVED_GROUPS]
    members += [(f.name, f.c_type, 1, True) for f in layout.spec.counters]
    for name, c_type, count, counter in members:
        size, align, _ = C_TYPES[c_type]
        offset = -(-offset // min(align, 4)) * min(align, 4)
        slots.append(Slot(name, c_type, count, offset, counter))
        offset += size * count
    return ImageLayout(tuple(slots), -(-offset // 4) * 4)


def _learning_spec(model):
    spec = learners.of_model(model)
    if spec.state is None:
        raise ValueError(f"a {spec.name} model keeps no learning state on the device: it has no state images")
    if not learners.is_fitted(model) or model.device_state() is None:
        raise ValueError(f"this {type(model).__name__} has not started (no input setup or classes yet)")
    return spec


def _output(model) -> dict:
    """What the hash holds of a model's output: its class labels, or a regressor's target scale."""
    output = output_context(model)
    return {"target": output["target"]} if output["target"] else {"classes": output["class_names"]}


def model_hash(model) -> int:
    """The 32-bit hash of a model's constants that its bundle bakes into every image (see the module doc)."""
    spec = _learning_spec(model)
    layout = model.layout()
    input_dtype, n_features = learners.model_input(model)
    described = {
        "image_version": IMAGE_VERSION,
        "learner": spec.name,
        "config": [[f.name, c_scalar(layout.config[f.name], f.c_type)] for f in spec.state.config],
        "input_dtype": str(input_dtype),
        "n_features": int(n_features),
        **_output(model),
        "slots": [[s.name, s.c_type, s.count, s.offset] for s in image_layout(layout).slots],
    }
    crc = zlib.crc32(json.dumps(described, sort_keys=True).encode())
    bins = getattr(model, "bins_", None)
    if bins is not None:
        edges, offsets = bins.flat_edges()
        crc = zlib.crc32(np.ascontiguousarray(offsets, dtype="<u2").tobytes(), crc)
        crc = zlib.crc32(np.ascontiguousarray(edges).astype(edges.dtype.newbyteorder("<")).tobytes(), crc)
    return crc


def payload(model) -> bytes:
    """The payload bytes of a model's current state (the state an export now starts from)."""
    _learning_spec(model)
    arrays, counters = model.device_state()
    image = image_layout(model.layout())
    out = bytearray(image.payload_bytes)
    for slot in image.slots:
        values = np.asarray(counters[slot.name] if slot.counter else arrays[slot.name])
        data = values.astype(slot.dtype).reshape(-1).tobytes()
        if len(data) != slot.bytes:
            raise ValueError(f"state {slot.name!r} has {len(data)} bytes, the layout has {slot.bytes}")
        out[slot.offset:slot.offset + slot.bytes] = data
    return bytes(out)


def seal(model_hash_value: int, sequence: int, body: bytes) -> bytes:
    """Header + payload, as ``es_image_seal`` writes it."""
    head = _HEADER.pack(MAGIC, IMAGE_VERSION, HEADER_BYTES, model_hash_value, sequence & 0xFFFFFFFF, len(body), 0)
    crc = zlib.crc32(body, zlib.crc32(head[:20]))
    return head[:20] + struct.pack("<I", crc) + body


def write_image(model, sequence: int = 1) -> bytes:
    """The state image of a model's current state, as its bundle's ``NAME_save`` writes it."""
    SEQUENCE.check(sequence)
    return seal(model_hash(model), sequence, payload(model))


@dataclass(frozen=True)
class Header:
    version: int
    model_hash: int
    sequence: int
    payload_bytes: int
    crc: int


def check_image(model, image: bytes) -> Header:
    """The header of a complete, intact image of this model; ``ValueError`` naming what is wrong otherwise (the
    same checks as ``es_image_check``)."""
    image = bytes(image)
    expected = image_layout(model.layout()).image_bytes
    if len(image) < HEADER_BYTES:
        raise ValueError(f"state image of {len(image)} bytes: shorter than its {HEADER_BYTES}-byte header")
    magic, version, header_bytes, hash_value, sequence, size, crc = _HEADER.unpack_from(image)
    if magic != MAGIC:
        raise ValueError(f"not an edgestream state image (magic {magic!r}, expected {MAGIC!r})")
    if version != IMAGE_VERSION or header_bytes != HEADER_BYTES:
        raise ValueError(f"state image format version {version} (header {header_bytes} bytes); this edgestream "
                         f"reads version {IMAGE_VERSION}")
    if len(image) != expected or size != expected - HEADER_BYTES:
        raise ValueError(f"state image of {len(image)} bytes (its header says {HEADER_BYTES + size}); this "
                         f"model's images have {expected} bytes")
    actual = zlib.crc32(image[HEADER_BYTES:], zlib.crc32(image[:20]))
    if actual != crc:
        raise ValueError(f"state image CRC-32 {actual:#010x} does not match its header's {crc:#010x}: the image is "
                         f"corrupt or incomplete")
    own = model_hash(model)
    if hash_value != own:
        raise ValueError(f"state image of another model (model hash {hash_value:#010x}, this model's is {own:#010x})")
    return Header(version, hash_value, sequence, size, crc)


def image_arrays(model, image: bytes) -> tuple[dict, dict]:
    """(region arrays, counters) of a checked image."""
    check_image(model, image)
    body = bytes(image)[HEADER_BYTES:]
    arrays, counters = {}, {}
    for slot in image_layout(model.layout()).slots:
        values = np.frombuffer(body, dtype=slot.dtype, count=slot.count, offset=slot.offset).copy()
        if slot.counter:
            counters[slot.name] = int(values[0])
        else:
            arrays[slot.name] = values
    return arrays, counters


def read_image(model, image: bytes):
    """A copy of ``model`` that continues from the state in ``image`` (as the device does after
    ``NAME_restore``); the model itself is unchanged. Refuses images that are corrupt, of another model or whose
    state the learner refuses (``restore_arrays``), with a ``ValueError``.

    The image's regions and counters go to the learner's ``load_device_state``."""
    _learning_spec(model)
    arrays, counters = image_arrays(model, image)
    clone = copy.deepcopy(model)
    clone.load_device_state(arrays, counters)
    return clone


def load_image(model, path) -> tuple[object, bytes]:
    """(:func:`read_image` of the image file at ``path``, the image); errors name the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read state image {path}: {error.strerror or error}") from None
    try:
        return read_image(model, data), data
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def save_image(model, path, sequence: int = 1) -> bytes:
    """Write the :func:`write_image` of ``model`` to ``path`` (atomically, as model files are written)."""
    from .modelfile import write_atomic

    data = write_image(model, sequence)
    try:
        write_atomic(Path(path), data)
    except OSError as error:
        raise OSError(error.errno, f"cannot write state image {path}: {error.strerror or error}") from None
    return data


def sequence_of(image: bytes) -> int:
    """The sequence number in an image's header (unchecked)."""
    return _HEADER.unpack_from(bytes(image))[4]


def newer(a: int, b: int) -> bool:
    """Sequence a is newer than b (serial number arithmetic, as ``es_image_newer``)."""
    difference = (a - b) & 0xFFFFFFFF
    return 0 < difference < 0x80000000


def context(model, name: str) -> dict:
    """The template context of ``codegen/checkpoint.c.j2`` for a model's bundle."""
    layout = model.layout()
    image = image_layout(layout)
    body = payload(model)
    return {"checkpoint": {
        "prefix": layout.spec.prefix,
        "hash": model_hash(model),
        "payload_bytes": image.payload_bytes,
        "regions": image.regions,
        "counters": image.counters,
        "unsaved": [r.name for r in layout.regions if r.group in UNSAVED_GROUPS],
        "rebuild": any(r.group == "cache" for r in layout.regions),
        "exported": list(body) if any(body) else None,
    }}
