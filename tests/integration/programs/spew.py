# Writes N lines of varied length (some long, some with odd bytes) as fast as it can, to
# stdout and stderr; every line names its rank and sequence number and carries a checksum.
import os
import sys
import zlib

n = int(sys.argv[1])
rank = os.environ["RANK"]
out, err = sys.stdout.buffer, sys.stderr.buffer
for i in range(n):
    body = (b"%s-%d-" % (rank.encode(), i)) * (1 + (i * 7919) % 97)
    if i % 1000 == 999:
        body += b"x" * 70000  # longer than a pipe buffer
    line = b"R%s S%d C%08x %s\n" % (rank.encode(), i, zlib.crc32(body), body)
    (err if i % 5 == 0 else out).write(line)
out.flush()
err.flush()
# A last line without newline: must still arrive, whole.
out.write(b"R%s END" % rank.encode())
