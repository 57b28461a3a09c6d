package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// openPTY opens a pseudo-terminal pair: what is written to master is
// typed on the terminal slave names.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, fmt.Sprintf("pseudo-terminals (%v)", err), "run where /dev/ptmx opens (a container with devpts)")
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestBoothRestoresTerminal: an agent that leaves the terminal without
// echo and line editing (stty -echo -icanon, as a crashed curses program
// would) gets it back as it was when the booth run ends.
func TestBoothRestoresTerminal(t *testing.T) {
	requireConfinedBooth(t)
	_, slave := openPTY(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Fatalf("a new terminal without echo or canonical mode: %#x", before.Lflag)
	}
	t.Chdir(t.TempDir())
	var out, errs bytes.Buffer
	code := run(t.Context(), []string{"record", "--booth", "--commit", "never", "-o", filepath.Join(t.TempDir(), "t.jbx"),
		"--", "sh", "-c", "stty -echo -icanon && stty -a"}, &Env{Stdin: slave, Stdout: &out, Stderr: &errs})
	if code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag {
		t.Errorf("terminal left with lflag %#x, was %#x (agent's stty -a: %s)", after.Lflag, before.Lflag, out.String())
	}
}

// TestDiscardInput: what was typed before the booth's question does not
// answer it.
func TestDiscardInput(t *testing.T) {
	master, slave := openPTY(t)
	if _, err := master.WriteString("y\n"); err != nil {
		t.Fatal(err)
	}
	// The line discipline takes what was typed in the background.
	for i := 0; ; i++ {
		if n, _ := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); n > 0 {
			break
		}
		if i == 200 {
			t.Fatal("typed input never reached the terminal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	discardInput(slave)
	if n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); err != nil || n != 0 {
		t.Errorf("%d bytes still waiting after discardInput (%v)", n, err)
	}
}
