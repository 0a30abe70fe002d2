#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz harness into tests/fuzz/corpus/<harness>/: a handful
of small valid inputs (and a few near misses). Run once; the files are committed. Inputs that
the fuzzer finds on its own stay in build-fuzz/corpus and are not committed."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def cbor_head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for extra, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | extra]) + struct.pack(fmt, n)
    raise ValueError(n)


def cbor(v):
    """The subset of CBOR that tlaunch's messages use."""
    if v is None:
        return b"\xf6"
    if v is True or v is False:
        return b"\xf5" if v else b"\xf4"
    if isinstance(v, int):
        return cbor_head(0, v) if v >= 0 else cbor_head(1, -1 - v)
    if isinstance(v, float):
        return b"\xfb" + struct.pack(">d", v)
    if isinstance(v, bytes):
        return cbor_head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode()
        return cbor_head(3, len(b)) + b
    if isinstance(v, list):
        return cbor_head(4, len(v)) + b"".join(cbor(x) for x in v)
    if isinstance(v, dict):
        return cbor_head(5, len(v)) + b"".join(cbor(k) + cbor(x) for k, x in v.items())
    raise TypeError(v)


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def output_record(rank, stream, data):
    return b"\x01" + struct.pack(">I", rank) + bytes([stream]) + data


def write(harness, files):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())


MESSAGES = {
    "hello": {"t": "hello", "v": 1, "node": "gpu01", "nonce": b"\x00\x11" * 16},
    "prepare": {"t": "prepare", "launch": {"argv": ["python3", "train.py"], "env": {"A": "1"}, "n": 3}},
    "exit": {"t": "exit", "r": 3, "code": -9, "signaled": True, "tail": ["a", "b"]},
    "fence": {"t": "fence", "seq": 1 << 40, "collect": False, "d": b"\xff" * 40},
    "floats": {"t": "stats", "load": 0.5, "none": None},
}

# Harnesses that take parameters read them from the end of the input (FuzzedDataProvider):
# these trailers give them a typical setting.
FRAME_TRAILER = b"\x2a\x00\x00\x00" + b"\x01" + b"\x2c\x01"  # chunk seed, raise to 256 MiB, limit 300
LINES_TRAILER = b"\x07\x00\x00\x00" + b"\x10"  # chunk seed, lines of 16 bytes at most

write("message", {f"{name}.cbor": cbor(m) for name, m in MESSAGES.items()})
write("frame_decoder", {
    "hello": frame(cbor(MESSAGES["hello"])) + FRAME_TRAILER,
    "two_messages": frame(cbor(MESSAGES["exit"])) + frame(cbor(MESSAGES["prepare"])) + FRAME_TRAILER,
    "output": frame(output_record(7, 1, b"step 10 loss 2.5\n")) + frame(cbor(MESSAGES["fence"])) + FRAME_TRAILER,
    "empty_frame": frame(b"") + FRAME_TRAILER,
    "oversize": struct.pack(">I", 5000) + b"x" * 20 + FRAME_TRAILER,
})
write("output_record", {
    "stdout": output_record(0, 1, b"hello\n"),
    "stderr": output_record(70000, 2, b"Traceback\n  File x\n"),
    "binary": output_record(3, 1, bytes(range(256))),
    "empty": output_record(1, 2, b""),
})
write("hostlist", {
    "simple": "node[1-4,07]",
    "padded": "gpu[08-10],cpu[1-3]",
    "two_groups": "rack[1-2]-node[01-02]",
    "names": "a1,b2 c3\td4\n",
    "suffix": "n[1-3].ib,x",
    "tasks": "2(x3),1",
})
write("hostfile", {
    "openmpi": "# nodes\nnode1 slots=8\nnode2 slots=8 max_slots=16 net_if=ib1\n",
    "mpich": "gpu01:4\ngpu02:4\n",
    "hostlist": "gpu[01-04] slots = 8\nalice@cpu[1-2]\n",
    "ipv6": "fe80::1 slots=2\n",
    "include": "node1 slots=4\nnode2 slots=4\n\0node1:0,1@node2",
    "exclude": "node[1-3] slots=2\n\0node2:1",
})
write("line_splitter", {
    "lines": b"epoch 1\nepoch 2\r\nepoch 3" + LINES_TRAILER,
    "progress": b"10%\r20%\r30%\r\ndone\n" + LINES_TRAILER,
    "long": b"x" * 100 + b"\n" + b"y" * 17 + LINES_TRAILER,
    "binary": bytes(range(256)) + LINES_TRAILER,
    "crlf_split": b"a\r" + b"\n" * 3 + b"\r\r\n" + LINES_TRAILER,
})
