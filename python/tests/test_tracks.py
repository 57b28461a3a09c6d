"""Tracks and their connections (issue 32): the bare decorator, every
kind of function, context managers, a Jukebox's own run, the base-URL
variables, nesting and concurrency, and the exceptions of misuse.

Run by `go test ./cmd/jukebox -run TestPythonSDK`, as test_sdk.py."""

import os
import shutil
import subprocess
import tempfile
import unittest

import test_sdk
from test_sdk import frames


def turns(tape):
    return [f["payload"] for f in frames(tape) if f["kind"] == "agent.turn"]


class ScriptBase(test_sdk.SDKBase):
    def run_script(self, text):
        self.script("agent.py", text)
        return self.python("agent.py").stdout


class TrackTest(ScriptBase):
    def test_bare_decorator_runs_and_records(self):
        out = self.run_script('''
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track
            def refund(amount):
                with jb.record_agent_turn("planner", f"refund {amount}"):
                    pass
                return amount * 2

            print("result", refund(21))
        ''')
        self.assertIn("result 42", out)
        [tape] = self.tapes()
        self.assertTrue(os.path.basename(tape).startswith("refund-"), tape)
        self.assertEqual([t["text"] for t in turns(tape)], ["refund 21"])

    def test_every_kind_of_function_and_block(self):
        out = self.run_script('''
            import asyncio
            from jukebox import Jukebox
            jb = Jukebox()

            def turn(msg):
                with jb.record_agent_turn("a", msg):
                    pass

            @jb.track
            async def coro():
                turn("coro")
                return "c"

            @jb.track(name="gen")
            def gen():
                turn("gen")
                yield 1
                yield 2

            @jb.track
            async def agen():
                turn("agen")
                yield 3

            async def main():
                print(await coro(), list(gen()), [x async for x in agen()])
                async with jb.track("async-block"):
                    turn("async-block")

            asyncio.run(main())
            with jb.track("block"):
                turn("block")
        ''')
        self.assertIn("c [1, 2] [3]", out)
        seen = {}
        for tape in self.tapes():
            name = os.path.basename(tape).rsplit("-", 2)[0]
            seen[name] = [t["text"] for t in turns(tape)]
        self.assertEqual(seen, {"coro": ["coro"], "gen": ["gen"], "agen": ["agen"],
                                "async-block": ["async-block"], "block": ["block"]})

    def test_a_second_jukebox_never_joins_the_first_ones_run(self):
        self.run_script('''
            from jukebox import Jukebox
            first = Jukebox(tape_dir="tapes")

            @first.track
            def outer():
                second = Jukebox(tape_dir="other")
                assert not second.recording, "the second Jukebox took the first one's run for record's"
                with second.record_agent_turn("second", "mine"):
                    pass
                second.close()
                with first.record_agent_turn("first", "ours"):
                    pass
            outer()
        ''')
        [tape] = self.tapes()
        self.assertEqual([t["agent"] for t in turns(tape)], ["first"])
        other = os.path.join(self.dir, "other")
        [second] = os.listdir(other)
        self.assertEqual([t["agent"] for t in turns(os.path.join(other, second))], ["second"])

    def test_base_urls_only_while_a_track_runs(self):
        out = self.run_script('''
            import os
            from jukebox import Jukebox
            os.environ["ANTHROPIC_BASE_URL"] = "http://mine.invalid"
            jb = Jukebox()
            print("before", os.environ.get("OPENAI_BASE_URL"))

            @jb.track
            def run():
                print("inside", os.environ["OPENAI_BASE_URL"].startswith("http://127.0.0.1:"),
                      os.environ["ANTHROPIC_BASE_URL"] != "http://mine.invalid")
            run()
            print("after", os.environ.get("OPENAI_BASE_URL"), os.environ.get("ANTHROPIC_BASE_URL"),
                  os.environ.get("JUKEBOX_CONTROL"))
            with jb.record_agent_turn("outside", "a run of the script's, no variables"):
                print("outside", os.environ.get("OPENAI_BASE_URL"))
        ''')
        self.assertIn("before None", out)
        self.assertIn("inside True True", out)
        self.assertIn("after None http://mine.invalid None", out)
        self.assertIn("outside None", out)

    def test_nested_tracks_are_children_and_concurrent_ones_apart(self):
        self.run_script('''
            import asyncio
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track
            def inner():
                with jb.record_agent_turn("in", "inner"):
                    pass

            @jb.track
            def outer():
                with jb.record_agent_turn("out", "outer"):
                    pass
                inner()
            outer()

            @jb.track
            async def worker(i):
                async with jb.record_agent_turn("w", f"worker {i}"):
                    await asyncio.sleep(0)

            async def both():
                await asyncio.gather(worker(1), worker(2))
            asyncio.run(both())
        ''')
        tapes = {os.path.basename(t).rsplit("-", 2)[0]: t for t in self.tapes()}
        self.assertEqual(sorted(tapes), ["outer", "worker"], "a nested or concurrent track started a run of its own")
        fs = frames(tapes["outer"])
        marks = [(f["payload"]["label"], f["payload"].get("note")) for f in fs if f["kind"] == "marker"]
        self.assertEqual(marks, [("track.start", "outer#1/inner#2"), ("track.end", "outer#1/inner#2")])
        self.assertEqual([(t["text"], t["track"]) for t in turns(tapes["outer"])],
                         [("outer", "outer#1"), ("inner", "outer#1/inner#2")])
        ws = turns(tapes["worker"])
        self.assertEqual(sorted(t["text"] for t in ws), ["worker 1", "worker 2"])
        self.assertEqual(len({t["track"] for t in ws}), 2, f"concurrent turns not told apart: {ws}")
        self.assertEqual([t["turn"] for t in ws], [1, 1])

    def test_misuse_raises_specific_exceptions(self):
        out = self.run_script('''
            import math, os
            from jukebox import Jukebox, CircuitBreaker, AuthError, Control

            def raises(kind, fn):
                try:
                    fn()
                except kind as e:
                    return kind.__name__
                except Exception as e:
                    return f"{type(e).__name__}: {e}"
                return "nothing"

            for v in (float("nan"), float("inf")):
                print("breaker", raises(ValueError, lambda: CircuitBreaker(max_cost_usd=v)))
            jb = Jukebox()
            print("track", raises(TypeError, lambda: jb.track(42)))
            print("name", raises(ValueError, lambda: jb.track("  ")))
            print("cost", raises(ValueError, lambda: jb.record_agent_turn("a", "m", cost_usd=float("nan"))))
            print("agent", raises(TypeError, lambda: jb.record_agent_turn(None)))
            with open("keep.txt", "w") as f:
                f.write("precious")
            with jb.track("t"):
                bad = Control(os.environ["JUKEBOX_CONTROL"], "not-the-token")
                print("auth", raises(AuthError, lambda: bad.call("GET", "info")))
                with jb.record_agent_turn("a", "m") as tx:
                    print("none", raises(TypeError, lambda: tx.stage_file_write("keep.txt", None)))
                    print("params", raises(TypeError, lambda: tx.stage_sql("db.sqlite", "SELECT 1", "x")))
                    try:
                        tx._op("write", {"path": "keep.txt", "content": None})
                    except Exception as e:
                        print("null", type(e).__name__, e)
        ''')
        for line in ("breaker ValueError", "track TypeError", "name ValueError", "cost ValueError",
                     "agent TypeError", "auth AuthError", "none TypeError", "params TypeError"):
            self.assertIn(line, out)
        self.assertIn("null JukeboxError jukebox: write keep.txt: content is missing or null", out)
        with open(os.path.join(self.dir, "keep.txt")) as f:
            self.assertEqual(f.read(), "precious", "a null content emptied the file")

    def test_parent_folders_and_counts(self):
        out = self.run_script('''
            from jukebox import Jukebox, SQLError
            jb = Jukebox()
            with jb.track("t"):
                with jb.record_agent_turn("a", "m") as tx:
                    tx.stage_file_write("reports/2026/q4.txt", "ok")
                tx = jb.begin()
                tx.stage_sql("db.sqlite", "CREATE TABLE t (x)")
                tx.stage_sql("db.sqlite", "INSERT INTO t VALUES (:x)", {"x": 1})
                try:
                    tx.stage_sql("db.sqlite", "SELECT * FROM missing")
                except SQLError as e:
                    print("sqlite error", "no such table" in str(e))
                print("changes", tx.commit())
        ''')
        with open(os.path.join(self.dir, "reports", "2026", "q4.txt")) as f:
            self.assertEqual(f.read(), "ok")
        self.assertIn("sqlite error True", out)
        self.assertIn("changes 3", out)  # the database file and two statements


class ConcurrentTurnsReplayTest(ScriptBase):
    def test_asyncio_turns_replay_whichever_thread_sends_first(self):
        # The turn's number was taken in the thread that sends it, so two
        # tasks' turns swapped numbers from run to run: a replay diverged
        # ("differs ... at turn") in 4 of 10 tries, 7 of 10 with three.
        self.script("agent.py", '''
            import asyncio
            from jukebox import Jukebox
            jb = Jukebox()

            async def worker(name):
                async with jb.record_agent_turn(name, f"hello from {name}"):
                    pass

            @jb.track("team")
            async def main():
                await asyncio.gather(worker("alice"), worker("bob"), worker("carol"))

            asyncio.run(main())
        ''')
        self.python("agent.py")
        [tape] = self.tapes()
        for i in range(6):
            proc = subprocess.run([test_sdk.BIN, "replay", tape], cwd=self.dir, env=self.env, capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, f"replay {i + 1}: {proc.stderr}")


    def test_transactions_begun_at_once_replay_whichever_begins_first(self):
        # Seen: asyncio tasks whose turns stage writes (README's example,
        # gathered): each turn's transaction begins in a thread of the
        # loop's executor, in whatever order those run; a replay answered
        # the beginnings in the recorded order, so a task whose thread
        # began first this time got another's transaction and diverged at
        # its first staged write. SLOW names the task whose transaction
        # begins last (the agent holds its thread back a moment).
        self.script("agent.py", '''
            import asyncio, os, threading, time
            from jukebox import Jukebox, _control
            jb = Jukebox()
            slow, turn_of = os.environ["SLOW"], threading.local()
            call = _control.Control.call

            def held(self, method, path, body=None):
                if path == "turn":
                    turn_of.agent = body["agent"]
                elif path == "tx" and getattr(turn_of, "agent", "") == slow:
                    time.sleep(0.3)
                return call(self, method, path, body)

            _control.Control.call = held

            async def worker(name):
                async with jb.record_agent_turn(name, f"hello from {name}") as tx:
                    tx.stage_file_write(f"{name}.txt", name)

            @jb.track("team")
            async def main():
                await asyncio.gather(worker("alice"), worker("bob"), worker("carol"))

            asyncio.run(main())
        ''')
        self.python("agent.py", env=dict(self.env, SLOW="carol"))
        [tape] = self.tapes()
        for slow in ("alice", "bob", "carol"):
            proc = subprocess.run([test_sdk.BIN, "replay", tape], cwd=self.dir, env=dict(self.env, SLOW=slow),
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, f"replay, {slow}'s transaction begun last: {proc.stderr}")


class CheckBreakerTest(ScriptBase):
    def test_after_the_run_it_starts_none(self):
        # check_breaker() after a tripped track said nothing tripped and
        # started a run of its own (a second, two-frame tape).
        out = self.run_script('''
            from jukebox import Jukebox, CircuitBreaker, BreakerTripped
            jb = Jukebox(breaker=CircuitBreaker(max_cost_usd=0.5))

            @jb.track
            def budgeted():
                with jb.record_agent_turn("planner", "costly", cost_usd=1.0):
                    pass

            try:
                budgeted()
            except BreakerTripped as e:
                print("in the track:", e.rule)
            try:
                jb.check_breaker()
                print("after: nothing")
            except BreakerTripped as e:
                print("after:", e.rule)
            ok = Jukebox()

            @ok.track
            def fine():
                pass

            fine()
            ok.check_breaker()
            print("a run that did not trip: nothing")
        ''')
        self.assertIn("in the track: cost", out)
        self.assertIn("after: cost", out)
        self.assertIn("a run that did not trip: nothing", out)
        self.assertEqual(len(self.tapes()), 2, "check_breaker started a run")


class ExitStatusTest(ScriptBase):
    """The status a run the SDK started ends with (run.end) is the
    process's: sys.exit(0) inside a track was recorded as exit 1 (error
    "SystemExit: 0"), sys.exit(n) inside one as 1; outside any track an
    uncaught exception or sys.exit(n) was recorded as exit 0."""

    def ends(self, args):
        self.script("agent.py", '''
            import sys
            from jukebox import Jukebox
            jb = Jukebox()
            how, where = sys.argv[1], sys.argv[2]

            def work():
                with jb.record_agent_turn("x", "work"):
                    pass
                if how == "raise":
                    raise RuntimeError("boom")
                sys.exit(int(how))

            if where == "track":
                jb.track("t")(work)()
            else:
                work()
        ''')
        proc = self.python("agent.py", *args, check=False)
        [tape] = self.tapes()
        [end] = [f["payload"] for f in frames(tape) if f["kind"] == "run.end"]
        os.remove(tape)
        return proc.returncode, end.get("exit_code", 0), end.get("error", "")

    def test_exit_status_is_the_processs(self):
        for where in ("track", "outside"):
            for how, code, error in (("0", 0, ""), ("3", 3, "SystemExit: 3"), ("raise", 1, "RuntimeError: boom")):
                with self.subTest(where=where, how=how):
                    rc, recorded, err = self.ends([how, where])
                    self.assertEqual((rc, recorded, err), (code, code, error))


class ForkTest(ScriptBase):
    def test_forked_children_turn_on_their_own_connections(self):
        # Seen: a multiprocessing pool (fork) inside a track; each worker
        # inherited the track's kept-alive connection, their requests went
        # down one socket, and a worker read another's answer (KeyError:
        # 'tx'); with http.client the same run hung.
        out = self.run_script('''
            import multiprocessing as mp
            from jukebox import Jukebox
            jb = Jukebox()

            def child(i):
                with jb.record_agent_turn(agent_name=f"child{i}", message=f"from child {i}") as tx:
                    tx.stage_file_write(f"c{i}.txt", str(i))
                return i

            with jb.track("forks"):
                with jb.record_agent_turn(agent_name="parent", message="first") as tx:
                    tx.stage_file_write("p.txt", "p")
                with mp.get_context("fork").Pool(3) as pool:
                    print("children", sum(pool.map(child, range(6))))
                with jb.record_agent_turn(agent_name="parent", message="last") as tx:
                    tx.stage_file_write("p2.txt", "p")
        ''')
        self.assertIn("children 15", out)
        for name in ["p.txt", "p2.txt"] + [f"c{i}.txt" for i in range(6)]:
            self.assertTrue(os.path.exists(os.path.join(self.dir, name)), name)
        [tape] = self.tapes()
        self.assertEqual(sorted(t["text"] for t in turns(tape)),
                         sorted(["first", "last"] + [f"from child {i}" for i in range(6)]))

    def test_a_forked_childs_exit_ends_nothing(self):
        # A run begun outside any track ends at the interpreter's exit: a
        # child forked from it (os.fork, exiting as Python does) ended the
        # parent's run at its own exit.
        out = self.run_script('''
            import os, sys
            from jukebox import Jukebox
            jb = Jukebox()
            with jb.record_agent_turn(agent_name="parent", message="before"):
                pass
            pid = os.fork()
            if pid == 0:
                with jb.record_agent_turn(agent_name="child", message="in the child"):
                    pass
                sys.exit(0)
            _, status = os.waitpid(pid, 0)
            print("child", os.waitstatus_to_exitcode(status))
            with jb.record_agent_turn(agent_name="parent", message="after"):
                pass
            print("done")
        ''')
        self.assertIn("child 0", out)
        self.assertIn("done", out)
        [tape] = self.tapes()
        self.assertEqual([t["text"] for t in turns(tape)], ["before", "in the child", "after"])
        self.assertEqual([f["kind"] for f in frames(tape)].count("run.end"), 1)


class ReuseTest(ScriptBase):
    def test_tracks_and_processes_share_one_server(self):
        self.script("agent.py", '''
            from jukebox import Jukebox, _pool
            jb = Jukebox()

            @jb.track
            def step():
                pass
            step()
            step()
            print("started", len(_pool._STARTED))
        ''')
        self.assertIn("started 1", self.python("agent.py").stdout)
        self.assertIn("started 0", self.python("agent.py").stdout, "a second process started a server of its own")
        self.assertEqual(len(self.tapes()), 4)

    def test_a_server_of_other_variables_is_not_reused(self):
        # Seen: HOME inside the workspace, the booth refused to begin and
        # said to set XDG_STATE_HOME; set, the next process reached the
        # same reused server, which went on refusing.
        self.script("agent.py", '''
            from jukebox import Jukebox, JukeboxError
            jb = Jukebox()
            try:
                jb.begin().rollback("done")
                print("begun")
            except JukeboxError as e:
                print("refused:", e)
        ''')
        home = os.path.join(self.dir, "home")
        os.mkdir(home)
        env = {k: v for k, v in self.env.items() if k != "XDG_STATE_HOME"}
        out = self.python("agent.py", env=dict(env, HOME=home)).stdout
        self.assertIn("refused:", out)
        self.assertIn("set XDG_STATE_HOME", out)
        state = tempfile.mkdtemp(prefix="jukebox-state-")
        self.addCleanup(shutil.rmtree, state, True)
        out = self.python("agent.py", env=dict(env, HOME=home, XDG_STATE_HOME=state)).stdout
        self.assertIn("begun", out, "the server of the first process, started without XDG_STATE_HOME, was reused")

    def test_no_breaker_config_is_left_behind(self):
        # Seen: each pooled server's breaker config stayed in the
        # temporary folder (hundreds of serve-KEY.json piled up there).
        # The server reads it before it listens; the SDK then removes it.
        self.script("agent.py", '''
            import os
            from jukebox import CircuitBreaker, Jukebox, _pool
            jb = Jukebox(breaker=CircuitBreaker(max_cost_usd=3.25))

            @jb.track
            def step():
                pass
            step()
            step()
            key = _pool._key(jb.tape_dir, jb.breaker.config(), _pool.jukebox_bin())
            print("left", os.path.exists(os.path.join(_pool._folder(), f"serve-{key}.json")))
        ''')
        self.assertIn("left False", self.python("agent.py").stdout)
        self.assertIn("left False", self.python("agent.py").stdout, "a second process on the running server")

    def test_a_connection_closed_while_idle_is_opened_again(self):
        out = self.run_script('''
            import http.server, json, threading
            from jukebox import Control

            class Once(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"

                def do_GET(self):
                    body = json.dumps({"api": 1}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    self.close_connection = True  # closed, though the answer said keep-alive

                def log_message(self, *args):
                    pass

            srv = http.server.HTTPServer(("127.0.0.1", 0), Once)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            c = Control(f"http://127.0.0.1:{srv.server_port}", "t")
            print("answers", [c.call("GET", "info")["api"] for _ in range(3)])
        ''')
        self.assertIn("answers [1, 1, 1]", out)

class PostgresTest(test_sdk.SDKBase):
    def setUp(self):
        super().setUp()
        if not test_sdk.PG_DSN:
            if test_sdk.REQUIRE_ALL:
                self.fail("JUKEBOX_PG_DSN is not set: .ci starts PostgreSQL for this test")
            self.skipTest('needs PostgreSQL: eval "$(bash .ci/postgres.sh)"')

    def test_placeholders_errors_and_counts(self):
        self.script("agent.py", f'''
            from jukebox import Jukebox, SQLError
            dsn = {test_sdk.PG_DSN!r}
            jb = Jukebox()
            setup = jb.begin()
            setup.stage_sql(dsn, "DROP TABLE IF EXISTS sdk_styles")
            setup.stage_sql(dsn, "CREATE TABLE sdk_styles (who text, usd numeric, note text)")
            setup.commit()
            tx = jb.begin()
            tx.stage_file_write("ledger.json", "{{}}")
            tx.stage_sql(dsn, "INSERT INTO sdk_styles VALUES ($1, $2, '100%')", ["native", 1])
            tx.stage_sql(dsn, "INSERT INTO sdk_styles VALUES (%s, %s, '100%%')", ("format", 2))
            tx.stage_sql(dsn, "INSERT INTO sdk_styles VALUES (%(who)s, %(usd)s, '100%%')", {{"who": "pyformat", "usd": 3}})
            print("changes", tx.commit())
            tx = jb.begin()
            print("rows", tx.stage_sql(dsn, "SELECT who, note FROM sdk_styles ORDER BY usd"))
            try:
                tx.stage_sql(dsn, "SELECT * FROM sdk_no_such_table")
            except SQLError as e:
                print("sqlstate", e.sqlstate, "sdk_no_such_table" in str(e))
            tx.rollback("done")
            sqlonly = jb.begin()
            sqlonly.stage_sql(dsn, "DELETE FROM sdk_styles WHERE who = %s", ["native"])
            print("sql-only commit", sqlonly.commit())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("changes 4", out)  # one file, three statements
        self.assertIn("rows [('native', '100%'), ('format', '100%'), ('pyformat', '100%')]", out)
        self.assertIn("sqlstate 42P01 True", out)
        self.assertIn("sql-only commit 1", out)

    def test_a_commit_that_fails_leaves_the_transaction_rolled_back(self):
        # A statement failed, so PostgreSQL rolls the transaction back at
        # PREPARE TRANSACTION: the commit raised a plain JukeboxError, no
        # SQLSTATE, and tx.state stayed "open" although it had ended.
        self.script("agent.py", f'''
            import os
            from jukebox import Jukebox, SQLError
            dsn = {test_sdk.PG_DSN!r}
            jb = Jukebox()
            tx = jb.begin()
            tx.stage_file_write("failed.txt", "x")
            tx.stage_sql(dsn, "SELECT 1")
            try:
                tx.stage_sql(dsn, "SELECT * FROM sdk_no_such_table")
            except SQLError as e:
                print("statement", e.sqlstate)
            try:
                tx.commit()
            except SQLError as e:
                print("commit", e.sqlstate, e.rolled_back, tx.state, os.path.exists("failed.txt"))
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("statement 42P01", out)
        self.assertIn("commit 25P02 True rolled_back False", out)

    def test_a_server_that_cannot_prepare_is_refused_at_once(self):
        dsn = os.environ.get("JUKEBOX_PG_NOPREP_DSN", "")
        if not dsn:
            if test_sdk.REQUIRE_ALL:
                self.fail("JUKEBOX_PG_NOPREP_DSN is not set: TestPythonSDK starts such a server")
            self.skipTest("needs a PostgreSQL server with max_prepared_transactions = 0 (TestPythonSDK starts one)")
        self.script("agent.py", f'''
            from jukebox import Jukebox, SQLError
            jb = Jukebox()
            tx = jb.begin()
            try:
                tx.stage_sql({dsn!r}, "CREATE TABLE sdk_noprep (x int)")
                print("statement ran")
            except SQLError as e:
                print("refused:", e)
            tx.rollback("refused")
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("refused:", out)
        self.assertIn("max_prepared_transactions = 0", out)
        self.assertNotIn("<nil>", out)

if __name__ == "__main__":
    unittest.main()
