"""A newer SDK beside an older jukebox: staged writes go as binary
batches (application/x-jukebox-batch); a jukebox from before them refuses
one (its JSON decoder meets the writes' "content" lengths) before it
serves any operation, and the SDK sends the batch again as JSON, and every
later one. The stand-in below answers as that release's control API did
(a scripted peer, as the tests' model servers are)."""

import base64
import http.server
import json
import os
import sys
import tempfile
import threading
import unittest

# The SDK in this tree, as the other tests' scripts get it (PYTHONPATH).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jukebox._control import Control  # noqa: E402
from jukebox._tx import Transaction  # noqa: E402


class OldControl(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers["Content-Length"]))
        ctype = self.headers["Content-Type"]
        OldControl.seen.append(ctype)
        if ctype != "application/json":
            self.answer(400, {"error": {"message": 'jukebox: json: unknown field "content"', "type": "bad_request"}})
            return
        ops = json.loads(data)["ops"]
        OldControl.seen.append(ops)
        self.answer(200, {"answers": [{"status": 200, "body": {"committed": True} if o["op"] == "commit" else {}} for o in ops]})

    def answer(self, status: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


class BatchSkewTest(unittest.TestCase):
    def test_older_jukebox_gets_json_batches(self):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OldControl)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        ws = tempfile.mkdtemp()
        c = Control(f"http://127.0.0.1:{srv.server_address[1]}/_jukebox", "tok")
        tx = Transaction(c, "t1", ws, "", False)
        tx.stage_file_write("a.txt", "é <b>")
        tx.stage_file_write("b.bin", b"\xff\x00")
        tx.flush()
        tx.stage_file_write("c.txt", "c")
        tx.commit()
        kinds = [s for s in OldControl.seen if isinstance(s, str)]
        self.assertEqual(kinds, ["application/x-jukebox-batch", "application/json", "application/json"])
        first = [s for s in OldControl.seen if isinstance(s, list)][0]
        self.assertEqual([o["body"] for o in first], [
            {"path": "a.txt", "content": "é <b>"},
            {"path": "b.bin", "base64": True, "content": base64.b64encode(b"\xff\x00").decode()},
        ])
        self.assertEqual(tx.state, "committed")
        os.rmdir(ws)


if __name__ == "__main__":
    unittest.main()
