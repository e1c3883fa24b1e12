"""ui.linkcodec: what travels in a link is packed, bounded, and anything else is refused (docs/security.md)."""

from __future__ import annotations

import base64
import random
import zlib

from hypothesis import given
from hypothesis import strategies as st

from ui import linkcodec


def test_round_trip_and_compression() -> None:
    script = "python3 -m verl.trainer.main_ppo \\\n" + "".join(
        f"  actor_rollout_ref.rollout.n={i} \\\n" for i in range(200)
    )
    code = linkcodec.pack_text(script)
    assert code is not None and code.startswith("v1.")
    assert len(code) < len(script) / 4  # repetitive launch scripts pack well
    assert linkcodec.unpack_text(code) == script
    assert linkcodec.unpack({"c": [["__current__", "a", "rollout.n=8"]]}) is None  # not a code
    obj = {"c": [["__current__", "n = 4", "rollout.n=4"], ["x", "中文", ""]]}
    assert linkcodec.unpack(linkcodec.pack(obj)) == obj


def test_too_long_is_not_packed() -> None:
    noise = base64.b64encode(random.Random(0).randbytes(8000)).decode()  # ~10.7 KiB zlib cannot shrink below 8 KiB
    assert linkcodec.pack_text(noise) is None


def test_hostile_codes_are_refused() -> None:
    bomb = linkcodec.PREFIX + base64.urlsafe_b64encode(zlib.compress(b"a" * (1024 * 1024))).decode().rstrip("=")
    assert len(bomb) <= linkcodec.MAX_LINK_PARAM_CHARS  # 1 MiB of 'a' packs small: the inflate bound stops it
    assert linkcodec.unpack_text(bomb) is None
    for bad in ["", "v1.", "v2.eJwrAQ", "v1.<script>", "v1.../etc/passwd", "v1.AAAA", "v1." + "A" * 7000]:
        assert linkcodec.unpack_text(bad) is None, bad
    not_utf8 = linkcodec.PREFIX + base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe")).decode().rstrip("=")
    assert linkcodec.unpack_text(not_utf8) is None
    assert linkcodec.unpack(linkcodec.pack_text("{not json")) is None


@given(st.text(max_size=2000))
def test_any_text_round_trips(text: str) -> None:
    code = linkcodec.pack_text(text)
    assert code is None or linkcodec.unpack_text(code) == text


@given(st.text(max_size=300))
def test_arbitrary_codes_never_raise(code: str) -> None:
    linkcodec.unpack(code)
    linkcodec.unpack("v1." + code)
