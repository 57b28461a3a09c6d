# The agent of testdata/compat/sdk-writes-v1.jbx: staged writes that the
# Python SDK sent as JSON batches when it was recorded (text with
# accents, HTML characters and escapes, bytes, a mode, an empty file,
# folders), committed in two transactions, one rolled back.
from jukebox import Jukebox

jb = Jukebox()
with jb.track("writes"):
    tx = jb.begin()
    tx.stage_file_write("notes/résumé.txt", "élan <b>&amp;</b> \"quoted\" \\ back\ttab\nline 2 ✓ 😀\n")
    tx.stage_file_write("data/bytes.bin", bytes(range(256)) * 3, mode=0o600)
    tx.stage_file_write("empty.txt", "")
    for i in range(5):
        tx.stage_file_write(f"out/part-{i}.txt", f"part {i}\n" * (i * 500 + 1))
    print("commit:", tx.commit())
    tx = jb.begin()
    tx.stage_file_write("draft.txt", "not kept")
    tx.rollback("a draft")
    print("rolled back:", tx.state)
