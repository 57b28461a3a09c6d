package parquetw

import "encoding/binary"

// Thrift's compact protocol, the encoding of Parquet's page headers and
// footer, as much of it as those need.

// Compact types.
const (
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI32    = 5
	ctI64    = 6
	ctBinary = 8
	ctList   = 9
	ctStruct = 12
)

// thrift writes a compact-protocol struct: a field's id is written as the
// difference from the last one of its struct, so each struct entered
// keeps its own.
type thrift struct {
	b    []byte
	last []int
}

func (t *thrift) field(id, typ int) {
	top := len(t.last) - 1
	if d := id - t.last[top]; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d<<4|typ))
	} else {
		t.b = append(t.b, byte(typ))
		t.b = binary.AppendVarint(t.b, int64(id))
	}
	t.last[top] = id
}

func (t *thrift) i32(id int, v int32) {
	t.field(id, ctI32)
	t.b = binary.AppendVarint(t.b, int64(v))
}

func (t *thrift) i64(id int, v int64) {
	t.field(id, ctI64)
	t.b = binary.AppendVarint(t.b, v)
}

func (t *thrift) i8(id int, v int8) {
	t.field(id, ctByte)
	t.b = append(t.b, byte(v))
}

func (t *thrift) bool(id int, v bool) {
	if v {
		t.field(id, ctTrue)
	} else {
		t.field(id, ctFalse)
	}
}

func (t *thrift) str(id int, s string) {
	t.field(id, ctBinary)
	t.b = binary.AppendUvarint(t.b, uint64(len(s)))
	t.b = append(t.b, s...)
}

// begin enters a struct: as field id of the struct it is in, or (id 0)
// as the top struct or a list's element.
func (t *thrift) begin(id int) {
	if id != 0 {
		t.field(id, ctStruct)
	}
	t.last = append(t.last, 0)
}

// end closes the struct begin entered.
func (t *thrift) end() {
	t.b = append(t.b, 0)
	t.last = t.last[:len(t.last)-1]
}

// list writes a list's header; its n elements follow (a struct element
// between begin(0) and end).
func (t *thrift) list(id, elem, n int) {
	t.field(id, ctList)
	if n < 15 {
		t.b = append(t.b, byte(n<<4|elem))
	} else {
		t.b = append(t.b, byte(0xf0|elem))
		t.b = binary.AppendUvarint(t.b, uint64(n))
	}
}

func (t *thrift) listI32(id int, vs []int32) {
	t.list(id, ctI32, len(vs))
	for _, v := range vs {
		t.b = binary.AppendVarint(t.b, int64(v))
	}
}

func (t *thrift) listStr(id int, ss []string) {
	t.list(id, ctBinary, len(ss))
	for _, s := range ss {
		t.b = binary.AppendUvarint(t.b, uint64(len(s)))
		t.b = append(t.b, s...)
	}
}
