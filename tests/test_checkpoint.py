"""State images (checkpoints) of every learning bundle: host/device bytes, power loss at every byte, corruption.

Each learner that keeps a state on the device (``LearnerSpec.state``) is exported in its smallest ladder
configuration, learns on the device code (cffi), and saves/restores through the generated NAME_* functions."""

from __future__ import annotations

import copy
import struct
import zlib

import numpy as np
import pytest

from edgestream import checkpoint, data, learners
from edgestream.export import export_bundle
from edgestream.simulate import load_bundle
from edgestream.task import ANOMALY, task_of

LEARNING = [name for name, spec in learners.REGISTRY.items() if spec.state is not None and spec.checkpoints]
# every learning learner in its smallest rung, and in each of its test variants (LearnerSpec.variants)
MODELS = [(name, {}) for name in LEARNING] + [
    (name, variant) for name in LEARNING for variant in learners.get(name).variants]
ES_OK, ES_ERR_NULL, ES_ERR_SIZE, ES_ERR_IMAGE, ES_ERR_OTHER_MODEL = 0, 1, 6, 7, 8


def small_model(name: str, X, y, rows: int, variant=None):
    spec = learners.get(name)
    model = spec.make(spec.tasks[0], **{**(spec.ladder[-1] if spec.ladder else {}), **(variant or {})})
    if task_of(model) == ANOMALY:  # a detector learns rows alone
        return model.partial_fit(X[:rows])
    model.partial_fit(X[:rows], y[:rows], classes=np.unique(y))
    return model


def outputs(model, X) -> np.ndarray:
    """What a model or bundle answers for rows: Q15 probabilities, or a detector's scores and flags."""
    return model.predict_raw(X) if task_of(model) == ANOMALY else model.predict_proba_q15(X)


class Device:
    """A compiled bundle with its checkpoint functions on 4-byte aligned buffers."""

    def __init__(self, directory):
        self.bundle = load_bundle(directory)
        self.ffi, self.lib, name = self.bundle.ffi, self.bundle.lib, self.bundle.name
        self.fn = {f: getattr(self.lib, f"{name}_{f}") for f in
                   ("image_size", "save", "restore", "restore_latest", "reset")}
        self.size = int(self.fn["image_size"]())

    def buffer(self, data: bytes | None = None):
        words = self.ffi.new("uint32_t[]", (self.size + 3) // 4 + 1)
        view = self.ffi.cast("uint8_t *", words)
        if data is not None:
            self.ffi.memmove(view, data, len(data))
        return words, view

    def save(self) -> bytes:
        words, view = self.buffer()
        length = self.ffi.new("uint32_t *")
        assert self.fn["save"](view, self.size, length) == ES_OK
        assert length[0] == self.size
        return bytes(self.ffi.buffer(view, self.size))

    def restore(self, image: bytes, length: int | None = None, offset: int = 0) -> int:
        words, view = self.buffer(b"\0" * offset + image)
        return self.fn["restore"](view + offset, len(image) if length is None else length)

    def restore_latest(self, a: bytes | None, b: bytes | None) -> int:
        keep = [self.buffer(x) if x is not None else (None, self.ffi.NULL) for x in (a, b)]
        return self.fn["restore_latest"](keep[0][1], keep[1][1], self.size)

    def learn(self, X, y, model):
        detector = task_of(model) == ANOMALY
        for row, label in zip(X, y):
            assert self.bundle.learn_encoded(row, None if detector else model.encode_label(label)) == ES_OK


def payload(image: bytes) -> bytes:
    return image[checkpoint.HEADER_BYTES:]


def reseal(image: bytes, **fields) -> bytes:
    """The image with header fields changed and a correct CRC again (gets past the CRC check)."""
    magic, version, header, hash_, sequence, size, _ = struct.unpack_from("<4sHHIIII", image)
    values = dict(magic=magic, version=version, header=header, hash=hash_, sequence=sequence, size=size)
    values.update(fields)
    body = fields.get("body", image[24:])
    head = struct.pack("<4sHHIII", values["magic"], values["version"], values["header"], values["hash"],
                       values["sequence"], values["size"])
    return head + struct.pack("<I", zlib.crc32(body, zlib.crc32(head))) + body


@pytest.fixture(scope="module")
def stream():
    X, y = data.make_stream("sea", 400, seed=3)
    return X.astype(np.float32), y


@pytest.fixture(scope="module", params=MODELS,
                ids=[name + "".join(f"-{k}={v}" for k, v in variant.items()) for name, variant in MODELS])
def setup(request, stream, tmp_path_factory):
    X, y = stream
    name, variant = request.param
    model = small_model(name, X, y, 120, variant)
    directory = tmp_path_factory.mktemp(name)
    export_bundle(model, directory, name="dev")
    return (name, variant), model, Device(directory)


def test_device_image_equals_host_image(setup, stream):
    """The device's image after learning equals the host's image of the same learning, byte for byte; the
    exported state's image is what reset returns to."""
    name, model, device = setup
    X, y = stream
    device.fn["reset"]()
    exported = checkpoint.write_image(model)
    assert payload(device.save()) == payload(exported)
    host = small_model(name[0], X, y, 120, name[1])
    host.partial_fit(X[120:180], y[120:180])
    device.learn(X[120:180], y[120:180], model)
    image = device.save()
    assert len(image) == device.size == checkpoint.image_layout(model.layout()).image_bytes
    assert image == checkpoint.write_image(host, sequence=checkpoint.sequence_of(image))
    device.fn["reset"]()
    assert payload(device.save()) == payload(exported)


def learned(setup, stream, stop: int):
    """The device back at its exported state (rows 0..119), then rows 120..stop learned."""
    _, model, device = setup
    X, y = stream
    device.fn["reset"]()
    device.learn(X[120:stop], y[120:stop], model)
    return model, device, X, y


def test_host_continues_from_device_image(setup, stream):
    """Device learns, its image goes to Python, and Python continues exactly as the device continues."""
    model, device, X, y = learned(setup, stream, 200)
    image = device.save()
    host = checkpoint.read_image(model, image)
    assert checkpoint.check_image(model, image).sequence == checkpoint.sequence_of(image)
    device.learn(X[200:260], y[200:260], model)
    host.partial_fit(X[200:260], y[200:260])
    assert np.array_equal(outputs(device.bundle, X[:60]), outputs(host, X[:60]))
    continued = checkpoint.read_image(model, device.save())
    for key, values in host.saved_arrays().items():
        assert np.array_equal(values, continued.saved_arrays()[key]), key
    # and back: the host's image restores on the device, which then predicts as the host does
    assert device.restore(checkpoint.write_image(host, sequence=99)) == ES_OK
    assert np.array_equal(outputs(device.bundle, X[:60]), outputs(host, X[:60]))


def test_torn_write_at_every_offset_restores_old_or_new(setup, stream):
    """Slot A holds the last image, slot B an older one; the next image is written over B and the power fails
    after k bytes (k = 0 .. all), the rest of B old or erased: restore_latest always gives a complete state,
    the last one or the new one."""
    name, model, device = setup
    X, y = stream
    device.fn["reset"]()
    older = device.save()
    device.learn(X[120:140], y[120:140], model)
    last = device.save()
    device.learn(X[140:160], y[140:160], model)
    new = device.save()
    assert len({payload(older), payload(last), payload(new)}) == 3
    outcomes = {payload(last): 0, payload(new): 0}
    for rest in (older, b"\xff" * len(new)):
        for k in range(len(new) + 1):
            torn = new[:k] + rest[k:]
            assert device.restore_latest(last, torn) == ES_OK, k
            state = payload(device.save())
            assert state in outcomes, f"torn at byte {k}: restored a state that is neither the last nor the new one"
            outcomes[state] += 1
            assert (state == payload(new)) == (torn == new), k  # a tail already equal completes the write
    assert outcomes[payload(last)] > len(new)


def test_restore_refuses_corrupt_images_and_keeps_the_state(setup, stream):
    model, device, X, y = learned(setup, stream, 150)
    good = device.save()
    device.learn(X[150:170], y[150:170], model)
    before = payload(device.save())

    def refused(image, status, **kw):
        assert device.restore(image, **kw) == status
        assert payload(device.save()) == before

    for byte in range(len(good)):  # one bit flip in every byte: CRC, magic or length
        corrupt = bytearray(good)
        corrupt[byte] ^= 1 << (byte % 8)
        assert device.restore(bytes(corrupt)) in (ES_ERR_IMAGE, ES_ERR_SIZE, ES_ERR_OTHER_MODEL), byte
    assert payload(device.save()) == before
    refused(good[:-1], ES_ERR_SIZE)
    refused(good + b"\0", ES_ERR_SIZE)
    refused(good, ES_ERR_SIZE, length=0)
    refused(good, ES_ERR_SIZE, offset=1)  # not 4-byte aligned
    refused(reseal(good, hash=checkpoint.model_hash(model) ^ 1), ES_ERR_OTHER_MODEL)
    refused(reseal(good, version=checkpoint.IMAGE_VERSION + 1), ES_ERR_IMAGE)
    refused(reseal(good, magic=b"ESIN"), ES_ERR_IMAGE)
    refused(reseal(good, body=b"\xff" * (len(good) - 24)), ES_ERR_IMAGE)  # a valid CRC, an invalid state
    assert device.fn["restore"](device.ffi.NULL, device.size) == ES_ERR_NULL
    assert device.restore_latest(None, None) == ES_ERR_NULL
    # the host refuses the same images with a message
    for bad, words in ((good[:-1], "bytes"), (reseal(good, version=checkpoint.IMAGE_VERSION + 1), "version"),
                       (reseal(good, hash=1), "another model"), (good[:30] + b"\x55" + good[31:], "CRC")):
        with pytest.raises(ValueError, match=words):
            checkpoint.read_image(model, bad)
    assert device.restore(good) == ES_OK


def test_other_model_image_and_frozen_models(stream):
    X, y = stream
    a = small_model("shrubs", X, y, 100)
    b = small_model("shrubs", X * 2, y, 100)  # other bin edges: another model
    assert checkpoint.model_hash(a) != checkpoint.model_hash(b)
    with pytest.raises(ValueError, match="another model"):
        checkpoint.read_image(b, checkpoint.write_image(a))
    tree = learners.get("tree").make().fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="no learning state"):
        checkpoint.write_image(tree)


def test_cli_image_round_trip(tmp_path, stream, capsys):
    """edgestream image MODEL --to IMAGE writes the model's image; --from IMAGE -o MODEL2 continues from it."""
    from edgestream.cli import main
    from edgestream.modelfile import load_model, save_model

    X, y = stream
    fresh = small_model("shrubs", X, y, 150)
    model = copy.deepcopy(fresh).partial_fit(X[150:220], y[150:220])  # the same model, a later state
    save_model(model, tmp_path / "m.esm")
    assert main(["image", str(tmp_path / "m.esm"), "--to", str(tmp_path / "s.img"), "--sequence", "7"]) == 0
    image = (tmp_path / "s.img").read_bytes()
    assert image == checkpoint.write_image(model, 7)
    save_model(fresh, tmp_path / "f.esm")
    assert main(["image", str(tmp_path / "f.esm"), "--from", str(tmp_path / "s.img"), "-o", str(tmp_path / "g.esm")]) == 0
    continued = load_model(tmp_path / "g.esm")
    assert checkpoint.write_image(continued, 7) == image
    (tmp_path / "bad.img").write_bytes(image[:-4])
    assert main(["image", str(tmp_path / "f.esm"), "--from", str(tmp_path / "bad.img"), "-o", str(tmp_path / "x.esm")]) == 2
    assert "bad.img" in capsys.readouterr().err and not (tmp_path / "x.esm").exists()


def test_host_and_device_accept_the_same_images(setup, stream):
    """Images with one payload byte changed and a valid CRC: the device's restore accepts exactly those the
    host's read_image accepts (the learner's restore_arrays, the specification)."""
    model, device, X, y = learned(setup, stream, 170)
    good = device.save()
    rng = np.random.default_rng(5)
    disagreements = []
    for trial in range(150):
        body = bytearray(good[24:])
        at = int(rng.integers(len(body)))
        body[at] = int(rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.integers(256)]))
        image = reseal(good, body=bytes(body))
        try:
            checkpoint.read_image(model, image)
            host = True
        except ValueError:
            host = False
        if (device.restore(image) == ES_OK) != host:
            slot = next(s for s in checkpoint.image_layout(model.layout()).slots if s.offset <= at < s.offset + s.bytes)
            disagreements.append((slot.name, at - slot.offset, body[at], host))
    assert not disagreements, disagreements[:10]


@pytest.mark.parametrize("name", LEARNING)
def test_every_learning_learner_has_checkpoints(name):
    """A learning template includes the shared checkpoint code; its runtime validates candidates (and
    recomputes its caches when its state has any)."""
    from importlib import resources

    spec = learners.get(name)
    template = (resources.files("edgestream.codegen") / spec.template).read_text()
    assert '{% include "checkpoint.c.j2" %}' in template
    header = "".join((resources.files("edgestream.csrc") / f"{m}.h").read_text() for m in spec.runtime)
    assert f"es_status {spec.state.prefix}_validate(const {spec.state.prefix} *candidate);" in header
    if any(r.group == "cache" for r in spec.state.regions):
        assert f"void {spec.state.prefix}_rebuild(const {spec.state.prefix} *model);" in header


def assert_older_images_refused(name: str, model, before, tmp_path, monkeypatch) -> None:
    """The image ``model`` would have had under the older state description ``before`` is refused by the device
    (its size, or another model's hash at this size) and by the host."""
    import dataclasses

    device = Device(export_bundle(model, tmp_path / "now", name="dev"))
    with monkeypatch.context() as patch:
        patch.setitem(learners.REGISTRY, name, dataclasses.replace(learners.get(name), state=before))
        patch.setattr(model, "state_spec", before)
        old = checkpoint.write_image(model)
    assert len(old) < device.size
    assert device.restore(old) == ES_ERR_SIZE
    assert device.restore(old + b"\0" * (device.size - len(old))) == ES_ERR_OTHER_MODEL
    with pytest.raises(ValueError, match="bytes"):
        checkpoint.read_image(model, old)


def test_hoeffding_images_from_before_the_split_attempt_fields_are_refused(stream, tmp_path, monkeypatch):
    """An image of the state before the split attempts spread (no attempt regions, no work_per_call in the
    config) is refused by the device (its size, or another model's hash at this size) and by the host."""
    import dataclasses

    from edgestream.learners import hoeffding

    X, y = stream
    model = small_model("hoeffding", X, y, 120, hoeffding.SPREAD_VARIANT)
    state = hoeffding.STATE
    before = dataclasses.replace(state, config=tuple(f for f in state.config if f.name != "work_per_call"),
                                 regions=tuple(r for r in state.regions if r.group != "attempt"))
    assert_older_images_refused("hoeffding", model, before, tmp_path, monkeypatch)


def test_shrubs_images_from_before_the_spread_fields_are_refused(stream, tmp_path, monkeypatch):
    """An image of the shrubs' state before bounded work per call (no queue, no job counters, no work_per_call
    and units in the config) is refused by the device (its size, or another model's hash at this size) and by
    the host, whose restore_arrays also names an older layout's saved arrays."""
    import dataclasses

    from edgestream.learners import shrubs

    X, y = stream
    model = small_model("shrubs", X, y, 120, shrubs.SPREAD_VARIANT)
    state = shrubs.STATE
    new_config = {"work_per_call", "queue_size", "unit_row", "unit_train", "unit_terms", "unit_weights"}
    before = dataclasses.replace(state, config=tuple(f for f in state.config if f.name not in new_config),
                                 counters=state.counters[:4], regions=tuple(r for r in state.regions
                                                                            if r.group != "queue"))
    assert_older_images_refused("shrubs", model, before, tmp_path, monkeypatch)
    saved = model.saved_arrays()
    older = {name: values for name, values in saved.items() if not name.startswith("queue")}
    older["counters"] = saved["counters"][:4]
    with pytest.raises(ValueError, match="the saved state has 4 counters and lacks \\['queue_bins', 'queue_labels'\\]"):
        model.restore_arrays(older)
