// Command mcp measures what `jukebox mcp` adds to an MCP message: round
// trips (a request and its response) to a stdio JSON-RPC echo server,
// directly and through `jukebox mcp` recording a tape of its own, in the
// same run, interleaved in rounds. The target (issue 15) is under 0.5 ms
// a message, a round trip being two messages.
//
//	go -C bench run ./mcp [-n 2000]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
)

const serverEnv = "JUKEBOX_BENCH_MCP_SERVER"

func main() {
	if os.Getenv(serverEnv) == "1" {
		echoServer()
		return
	}
	n := flag.Int("n", 2000, "round trips a side")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/mcp:", err)
		os.Exit(1)
	}
}

// echoServer answers every request on stdin with its params, on stdout.
func echoServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", req.ID, req.Params)
		out.Flush()
	}
}

// session is a client of one server process.
type session struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func start(name string, args ...string) (*session, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &session{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// roundTrip sends request i and reads its response.
func (s *session) roundTrip(i int) (time.Duration, error) {
	t0 := time.Now()
	fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"round trip %d"}}}`+"\n", i, i)
	line, err := s.out.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.Contains(line, fmt.Sprintf(`"id":%d,`, i)) {
		return 0, fmt.Errorf("answer to %d: %s", i, line)
	}
	return time.Since(t0), nil
}

func (s *session) close() error {
	s.in.Close()
	return s.cmd.Wait()
}

func run(n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "jukebox-bench-mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	bin, err := benchutil.BuildJukebox(root)
	if err != nil {
		return err
	}
	direct, err := start(self)
	if err != nil {
		return err
	}
	tape := filepath.Join(root, "mcp.jbx")
	proxied, err := start(bin, "mcp", "--name", "echo", "-o", tape, "--", self)
	if err != nil {
		return err
	}
	var d, p []time.Duration
	for i := 0; i < n+50; i++ { // the first 50 warm up and are dropped
		dt, err := direct.roundTrip(i)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		pt, err := proxied.roundTrip(i)
		if err != nil {
			return fmt.Errorf("through jukebox mcp: %w", err)
		}
		if i >= 50 {
			d, p = append(d, dt), append(p, pt)
		}
	}
	if err := direct.close(); err != nil {
		return err
	}
	if err := proxied.close(); err != nil {
		return fmt.Errorf("jukebox mcp: %w", err)
	}
	md, mp := benchutil.Median(d), benchutil.Median(p)
	fmt.Printf("round trips: %d a side, a request and its response each\n", n)
	fmt.Printf("direct                    median %8.3f ms  p90 %8.3f ms\n", benchutil.MS(md), benchutil.MS(benchutil.Quantile(d, 0.9)))
	fmt.Printf("through jukebox mcp       median %8.3f ms  p90 %8.3f ms  (recording every message)\n", benchutil.MS(mp), benchutil.MS(benchutil.Quantile(p, 0.9)))
	fmt.Printf("added per message = %.3f ms  (target < 0.5 ms); ratio jukebox mcp/direct = %.2fx\n",
		benchutil.MS(mp-md)/2, float64(mp)/float64(md))
	return nil
}
