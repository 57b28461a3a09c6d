package sandbox

import (
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/blake2b"
)

// txName is the transaction's record (txMeta) inside its directory. Like
// the journal it is authenticated and bound: a keyed BLAKE2b-256 MAC
// under the booth key over a body that names the transaction and the
// workspace (real path, device and inode). A transaction whose tx.json
// does not verify (one that arrived with a cloned repository or a
// tarball, an earlier release's, a tampered or copied one) is listed,
// with the reason, and can be discarded; it is never opened, committed,
// or chosen as the default transaction.
const txName = "tx.json"

// txFormat names the authenticated tx.json format; a tx.json without it
// was written by an earlier release (or planted).
const txFormat = "jukebox-booth-tx/1"

// bodyMAC is the keyed BLAKE2b-256 of body under the name of its format,
// so that a journal's MAC never verifies a tx.json, nor the reverse.
func bodyMAC(format string, key, body []byte) []byte {
	h, err := blake2b.New256(key)
	if err != nil {
		panic(err) // only for a key longer than 64 bytes
	}
	h.Write([]byte(format))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// writeMeta binds tx.meta to the workspace, signs it with the booth key
// and replaces tx.json atomically.
func (tx *Tx) writeMeta() error {
	m := tx.meta
	m.ID, m.Workspace = filepath.Base(tx.dir), tx.ws.root
	fi, err := os.Stat(tx.ws.root)
	if err != nil {
		return err
	}
	m.Dev, m.Ino = devIno(fi)
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	data, err := json.Marshal(journalFile{Format: txFormat, MAC: hex.EncodeToString(bodyMAC(txFormat, tx.key, body)), Body: body})
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(tx.dir, txName), append(data, '\n'))
}

// readMeta reads dir's tx.json. untrusted, when set, says why the
// transaction must not be opened (m then holds what the file claims, for
// listing only); err is for failures to read it at all (fs.ErrNotExist
// when there is none).
func readMeta(w *workspace, dir string, keys *keyRing) (m txMeta, untrusted string, err error) {
	data, err := os.ReadFile(filepath.Join(dir, txName))
	if err != nil {
		return m, "", err
	}
	var f journalFile
	if err := json.Unmarshal(data, &f); err != nil {
		return m, "unreadable tx.json (" + err.Error() + ")", nil
	}
	switch {
	case f.Format == "":
		json.Unmarshal(data, &m)
		return m, "unauthenticated transaction (tx.json written by an earlier release, or planted)", nil
	case f.Format != txFormat:
		return m, fmt.Sprintf("tx.json of an unknown format %q", f.Format), nil
	}
	json.Unmarshal(f.Body, &m)
	key, err := keys.get()
	if errors.Is(err, errNoKey) {
		return m, "tx.json with no booth key to check it against (planted, or the key was removed)", nil
	}
	if err != nil {
		return m, "", err
	}
	mac, herr := hex.DecodeString(f.MAC)
	if herr != nil || subtle.ConstantTimeCompare(mac, bodyMAC(txFormat, key, f.Body)) != 1 {
		return m, "tx.json with a bad MAC (tampered, or written under another key)", nil
	}
	if m.ID != filepath.Base(dir) {
		return m, fmt.Sprintf("tx.json written for transaction %s, not %s", m.ID, filepath.Base(dir)), nil
	}
	fi, err := os.Stat(w.root)
	if err != nil {
		return m, "cannot check the transaction's workspace: " + err.Error(), nil
	}
	if dev, ino := devIno(fi); m.Workspace != w.root || m.Dev != dev || m.Ino != ino {
		return m, fmt.Sprintf("tx.json written for another workspace (%s)", m.Workspace), nil
	}
	return m, "", nil
}

// resignMeta signs again, bound to this workspace, the tx.json of a
// transaction that an authenticated journal proves this jukebox made (an
// undone commit reopens it): one begun by the release before tx.json was
// signed would otherwise be left open but untrusted.
func resignMeta(w *workspace, dir string, key []byte) error {
	var m txMeta
	data, err := os.ReadFile(filepath.Join(dir, txName))
	if err != nil {
		return err
	}
	var f journalFile
	if json.Unmarshal(data, &f) == nil && f.Format == txFormat {
		err = json.Unmarshal(f.Body, &m)
	} else {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return err
	}
	tx := &Tx{ws: w, dir: dir, meta: m, key: key}
	return tx.writeMeta()
}
