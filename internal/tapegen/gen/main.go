// Command gen remakes the sample tapes in testdata/tapes:
//
//	go run ./internal/tapegen/gen [-dir testdata/tapes]
//
// agent-run.jbx is a whole five-step streamed agent run with tool calls and
// file changes; torn.jbx is the same run cut off in the middle of step 3 as a
// crash would leave it; tampered.jbx has one streamed word changed and its
// frame CRC fixed up, so only the hash chain gives it away; sealed.jbx is
// agent-run.jbx sealed with the key in seal.key.
//
// Every tape is made in memory and read back before anything is written:
// agent-run.jbx and sealed.jbx must check in full, torn.jbx must open by
// recovery and check what it keeps, and tampered.jbx must fail at its hash
// chain. Otherwise gen writes nothing and fails. gen_test.go checks that
// the files in testdata/tapes are what gen makes now.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

// sealKey is the key sealed.jbx is sealed with, written as seal.key.
var sealKey = []byte("jukebox-sample-key-not-secret-0001\n")

// run makes the sample tapes and writes them to dir, or writes nothing
// when one of them does not read back as it should.
func run(dir string) error {
	files, mac, err := tapes()
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s (%d bytes) and its variants; seal %s\n", dir, len(files["agent-run.jbx"]), mac.Short())
	return nil
}

// tapes makes every sample file in memory, and checks each tape reads
// back as what it is meant to be (see checkVariants).
func tapes() (map[string][]byte, tapefmt.Hash, error) {
	whole, err := tapegen.Bytes(sampleSpec) // checked in full
	if err != nil {
		return nil, tapefmt.Hash{}, err
	}
	t, err := tapefmt.NewReader(bytes.NewReader(whole), int64(len(whole)))
	if err != nil {
		return nil, tapefmt.Hash{}, err
	}
	sealed, mac, err := seal(whole)
	if err != nil {
		return nil, tapefmt.Hash{}, err
	}
	files := map[string][]byte{"agent-run.jbx": whole, "torn.jbx": torn(t, whole), "tampered.jbx": tampered(t, whole),
		"sealed.jbx": sealed, "seal.key": sealKey}
	return files, mac, checkVariants(files)
}

// checkVariants reads back the variants of the sample run: torn.jbx opens
// by recovery and what it keeps checks in full; sealed.jbx checks in full
// with its seal; tampered.jbx opens and fails at the hash chain, and
// nowhere before it.
func checkVariants(files map[string][]byte) error {
	if err := tapegen.CheckTorn(files["torn.jbx"]); err != nil {
		return fmt.Errorf("torn.jbx: %w", err)
	}
	if err := tapegen.CheckSealed(files["sealed.jbx"], bytes.TrimSpace(sealKey)); err != nil {
		return fmt.Errorf("sealed.jbx: %w", err)
	}
	var fe *tapefmt.FormatError
	if err := tapegen.Check(files["tampered.jbx"]); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "chain") {
		return fmt.Errorf("tampered.jbx: want a broken hash chain, got %v", err)
	}
	return nil
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

// seal returns whole sealed with sealKey, and the seal. tapefmt.Seal seals
// a file in place, so the copy it seals lives in a scratch folder.
func seal(whole []byte) ([]byte, tapefmt.Hash, error) {
	tmp, err := os.MkdirTemp("", "tapegen-seal-")
	if err != nil {
		return nil, tapefmt.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "sealed.jbx")
	if err := os.WriteFile(path, whole, 0o644); err != nil {
		return nil, tapefmt.Hash{}, err
	}
	mac, err := tapefmt.Seal(path, bytes.TrimSpace(sealKey))
	if err != nil {
		return nil, tapefmt.Hash{}, err
	}
	sealed, err := os.ReadFile(path)
	return sealed, mac, err
}
