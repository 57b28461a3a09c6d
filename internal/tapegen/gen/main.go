// Command gen remakes the sample tapes in testdata/tapes:
//
//	go run ./internal/tapegen/gen [-dir testdata/tapes]
//
// agent-run.jbx is a whole five-step streamed agent run with tool calls and
// file changes; torn.jbx is the same run cut off in the middle of step 3 as a
// crash would leave it; tampered.jbx has one streamed word changed and its
// frame CRC fixed up, so only the hash chain gives it away; sealed.jbx is
// agent-run.jbx sealed with the key in seal.key.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"log"
	"os"
	"path/filepath"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// sampleSpec is the shape of agent-run.jbx.
var sampleSpec = tapegen.Spec{Steps: 5, Chunks: 12, Model: "gpt-4o-mini"}

func main() {
	dir := flag.String("dir", "testdata/tapes", "folder to write the tapes to")
	flag.Parse()
	if err := run(*dir); err != nil {
		log.Fatal(err)
	}
}

func run(dir string) error {
	var buf bytes.Buffer
	opts, _ := tapegen.Options()
	w, err := tapefmt.NewWriter(&buf, opts)
	if err != nil {
		return err
	}
	if err := tapegen.Write(w, sampleSpec); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	whole := buf.Bytes()
	t, err := tapefmt.NewReader(bytes.NewReader(whole), int64(len(whole)))
	if err != nil {
		return err
	}
	files := map[string][]byte{"agent-run.jbx": whole, "torn.jbx": torn(t, whole), "tampered.jbx": tampered(t, whole)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return seal(dir, whole)
}

// torn cuts the tape ten bytes into the first frame after step 2's commit
// plus a few frames, as a kill -9 mid-step leaves it.
func torn(t *tapefmt.Tape, whole []byte) []byte {
	commits := 0
	for i := range t.Len() {
		k, _, _ := t.KindAt(i)
		if k == tapefmt.KindStep {
			if commits++; commits == 3 {
				f, _ := t.Frame(i - 5)
				return append([]byte(nil), whole[:f.Offset+10]...)
			}
		}
	}
	panic("sample has fewer than three steps")
}

// tampered changes one streamed word in a proc.output frame of step 1 and
// recomputes that frame's CRC, as a careful forger would.
func tampered(t *tapefmt.Tape, whole []byte) []byte {
	b := append([]byte(nil), whole...)
	for f, err := range t.Frames(tapefmt.KindOutput) {
		if err != nil {
			panic(err)
		}
		if f.Seq < 20 {
			continue
		}
		start := f.Offset + 24 // the frame header is 24 bytes; its CRC is at 20
		i := bytes.IndexByte(b[start:start+int64(len(f.Payload))], 'e')
		if i < 0 {
			continue
		}
		b[start+int64(i)] = 'E'
		crc := crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), b[f.Offset:f.Offset+20])
		crc = crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), b[start:start+int64(len(f.Payload))])
		binary.LittleEndian.PutUint32(b[f.Offset+20:], crc)
		return b
	}
	panic("no output frame to tamper with")
}

func seal(dir string, whole []byte) error {
	key := []byte("jukebox-sample-key-not-secret-0001\n")
	path := filepath.Join(dir, "sealed.jbx")
	if err := os.WriteFile(path, whole, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "seal.key"), key, 0o644); err != nil {
		return err
	}
	mac, err := tapefmt.Seal(path, bytes.TrimSpace(key))
	fmt.Printf("wrote %s (%d bytes) and its variants; seal %s\n", dir, len(whole), mac.Short())
	return err
}
