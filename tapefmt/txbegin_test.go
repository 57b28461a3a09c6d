package tapefmt

import (
	"encoding/json"
	"testing"
)

// TestTxBeginConfined: tx.begin says confined true or false, both
// written; a tape from before the key reads with it unknown (nil), not
// as false.
func TestTxBeginConfined(t *testing.T) {
	for _, c := range []bool{false, true} {
		b, err := json.Marshal(TxBegin{Tx: "t", Mode: StagingCopy, Confined: &c})
		if err != nil {
			t.Fatal(err)
		}
		var got TxBegin
		if err := json.Unmarshal(b, &got); err != nil || got.Confined == nil || *got.Confined != c {
			t.Errorf("confined %v: wrote %s, read back %+v, %v", c, b, got, err)
		}
	}
	var old TxBegin
	if err := json.Unmarshal([]byte(`{"tx":"t","workspace":"/w","mode":"auto"}`), &old); err != nil || old.Confined != nil {
		t.Errorf("an older tx.begin: %+v, %v", old, err)
	}
}
