// Package parquetw writes rows of a struct type as a Parquet file: one
// row group, one data page a column, values PLAIN-encoded, levels
// RLE-encoded, pages compressed with GZIP. It knows the column types the
// tables of export/tables use, nothing more: strings, int32, int64,
// float64, bool, time.Time as a microsecond timestamp, optional *int32 and
// *float64, a []string list and a map[string]string, declared by struct
// tags as parquet-go reads them (`parquet:"name"`, `parquet:"name,optional"`,
// `parquet:"name,list"`, `parquet:"name,timestamp(microsecond)"`), with
// the schema parquet-go gives such a struct.
//
// It is a writer of its own rather than a general Parquet library
// because a library's package initialisation (parquet-go links the
// protobuf runtime and a dozen codecs) runs at every start of jukebox,
// whatever the command; the tests read what it writes back through
// parquet-go and DuckDB.
package parquetw

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Parquet's numbers (parquet.thrift).
const (
	typeBoolean   = 0
	typeInt32     = 1
	typeInt64     = 2
	typeDouble    = 5
	typeByteArray = 6

	repRequired = 0
	repOptional = 1
	repRepeated = 2

	convUTF8            = 0
	convMap             = 1
	convList            = 3
	convTimestampMicros = 10
	convInt32           = 17
	convInt64           = 18

	encPlain = 0
	encRLE   = 3

	codecGzip = 2

	pageData = 0
)

// node is an element of the schema: a group (children) or a column.
type node struct {
	name     string
	rep      int
	typ      int // a column's physical type; -1 for a group
	conv     int // converted type; -1 for none
	logical  func(*thrift)
	children []*node
}

// column is a column's data as the rows are written.
type column struct {
	path           []string
	typ            int
	maxDef, maxRep int
	defs, reps     []byte
	values         []byte
	bits           int // booleans: the values written, bit-packed in values
	n              int // levels written: values and nulls
}

func (c *column) level(def, rep int) {
	if c.maxDef > 0 {
		c.defs = append(c.defs, byte(def))
	}
	if c.maxRep > 0 {
		c.reps = append(c.reps, byte(rep))
	}
	c.n++
}

func (c *column) str(s string) {
	c.values = binary.LittleEndian.AppendUint32(c.values, uint32(len(s)))
	c.values = append(c.values, s...)
}

func (c *column) boolean(v bool) {
	if c.bits%8 == 0 {
		c.values = append(c.values, 0)
	}
	if v {
		c.values[len(c.values)-1] |= 1 << (c.bits % 8)
	}
	c.bits++
}

// field is how a struct field is written: its value into its columns.
type field struct {
	index int
	write func(v reflect.Value)
}

var timeType = reflect.TypeFor[time.Time]()

// schemaOf reads the schema of struct type t and how to write its fields.
func schemaOf(t reflect.Type) (*node, []*column, []field, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, nil, fmt.Errorf("parquetw: rows of %s, not a struct", t)
	}
	root := &node{name: t.Name(), rep: repRequired, typ: -1, conv: -1}
	var cols []*column
	var fields []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("parquet")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name // as parquet-go names it
		}
		n, write, err := fieldNode(sf.Type, name, opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("parquetw: %s.%s: %w", t.Name(), sf.Name, err)
		}
		root.children = append(root.children, n)
		first := len(cols)
		walkLeaves(n, nil, 0, 0, func(l *node, path []string, maxDef, maxRep int) {
			cols = append(cols, &column{path: path, typ: l.typ, maxDef: maxDef, maxRep: maxRep})
		})
		for _, c := range cols[first:] {
			if c.maxDef > 1 || c.maxRep > 1 {
				// The levels are written a bit each (appendLevels).
				return nil, nil, nil, fmt.Errorf("parquetw: %s.%s: levels over 1", t.Name(), sf.Name)
			}
		}
		own := cols[first:len(cols):len(cols)]
		fields = append(fields, field{index: i, write: func(v reflect.Value) { write(v, own) }})
	}
	return root, cols, fields, nil
}

// walkLeaves calls f for each column under n with its path and its
// maximum definition and repetition levels.
func walkLeaves(n *node, path []string, def, rep int, f func(*node, []string, int, int)) {
	path = append(slices.Clip(path), n.name)
	switch n.rep {
	case repOptional:
		def++
	case repRepeated:
		def++
		rep++
	}
	if n.typ >= 0 {
		f(n, path, def, rep)
		return
	}
	for _, c := range n.children {
		walkLeaves(c, path, def, rep, f)
	}
}

func stringNode(name string) *node {
	return &node{name: name, rep: repRequired, typ: typeByteArray, conv: convUTF8, logical: func(t *thrift) { t.begin(1); t.end() }}
}

// intLogical is INTEGER(bits, signed).
func intLogical(bits int8) func(*thrift) {
	return func(t *thrift) {
		t.begin(10)
		t.i8(1, bits)
		t.bool(2, true)
		t.end()
	}
}

// fieldNode is the schema of a field of type t and how to write its
// value into its columns.
func fieldNode(t reflect.Type, name, opts string) (*node, func(reflect.Value, []*column), error) {
	optional := opts == "optional"
	if opts != "" && opts != "optional" && opts != "list" && opts != "timestamp(microsecond)" {
		return nil, nil, fmt.Errorf("tag option %q", opts)
	}
	if optional {
		if t.Kind() != reflect.Pointer {
			return nil, nil, fmt.Errorf("optional %s: want a pointer", t)
		}
		n, write, err := fieldNode(t.Elem(), name, "")
		if err != nil || n.typ < 0 {
			return nil, nil, fmt.Errorf("optional %s", t)
		}
		n.rep = repOptional
		return n, func(v reflect.Value, cols []*column) {
			if v.IsNil() {
				cols[0].level(0, 0)
				return
			}
			write(v.Elem(), cols)
		}, nil
	}
	if t == timeType {
		if opts != "timestamp(microsecond)" {
			return nil, nil, fmt.Errorf("time.Time without timestamp(microsecond)")
		}
		n := &node{name: name, rep: repRequired, typ: typeInt64, conv: convTimestampMicros, logical: func(t *thrift) {
			t.begin(8) // TIMESTAMP
			t.bool(1, true)
			t.begin(2) // unit: MICROS
			t.begin(2)
			t.end()
			t.end()
			t.end()
		}}
		return n, func(v reflect.Value, cols []*column) {
			c := cols[0]
			c.level(c.maxDef, 0)
			c.values = binary.LittleEndian.AppendUint64(c.values, uint64(v.Interface().(time.Time).UnixMicro()))
		}, nil
	}
	if opts == "timestamp(microsecond)" {
		return nil, nil, fmt.Errorf("timestamp on %s", t)
	}
	if opts == "list" {
		if t.Kind() != reflect.Slice || t.Elem().Kind() != reflect.String {
			return nil, nil, fmt.Errorf("list of %s: only []string", t)
		}
		n := &node{name: name, rep: repRequired, typ: -1, conv: convList, logical: func(t *thrift) { t.begin(3); t.end() },
			children: []*node{{name: "list", rep: repRepeated, typ: -1, conv: -1, children: []*node{stringNode("element")}}}}
		return n, func(v reflect.Value, cols []*column) {
			c := cols[0]
			if v.Len() == 0 {
				c.level(0, 0)
				return
			}
			for i := range v.Len() {
				c.level(1, min(i, 1))
				c.str(v.Index(i).String())
			}
		}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return stringNode(name), func(v reflect.Value, cols []*column) {
			cols[0].level(cols[0].maxDef, 0)
			cols[0].str(v.String())
		}, nil
	case reflect.Int64:
		return &node{name: name, rep: repRequired, typ: typeInt64, conv: convInt64, logical: intLogical(64)}, func(v reflect.Value, cols []*column) {
			cols[0].level(cols[0].maxDef, 0)
			cols[0].values = binary.LittleEndian.AppendUint64(cols[0].values, uint64(v.Int()))
		}, nil
	case reflect.Int32:
		return &node{name: name, rep: repRequired, typ: typeInt32, conv: convInt32, logical: intLogical(32)}, func(v reflect.Value, cols []*column) {
			cols[0].level(cols[0].maxDef, 0)
			cols[0].values = binary.LittleEndian.AppendUint32(cols[0].values, uint32(int32(v.Int())))
		}, nil
	case reflect.Float64:
		return &node{name: name, rep: repRequired, typ: typeDouble, conv: -1}, func(v reflect.Value, cols []*column) {
			cols[0].level(cols[0].maxDef, 0)
			cols[0].values = binary.LittleEndian.AppendUint64(cols[0].values, math.Float64bits(v.Float()))
		}, nil
	case reflect.Bool:
		return &node{name: name, rep: repRequired, typ: typeBoolean, conv: -1}, func(v reflect.Value, cols []*column) {
			cols[0].level(cols[0].maxDef, 0)
			cols[0].boolean(v.Bool())
		}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.String {
			return nil, nil, fmt.Errorf("map %s: only map[string]string", t)
		}
		n := &node{name: name, rep: repRequired, typ: -1, conv: convMap, logical: func(t *thrift) { t.begin(2); t.end() },
			children: []*node{{name: "key_value", rep: repRepeated, typ: -1, conv: -1,
				children: []*node{stringNode("key"), stringNode("value")}}}}
		return n, func(v reflect.Value, cols []*column) {
			keys, vals := cols[0], cols[1]
			if v.Len() == 0 {
				keys.level(0, 0)
				vals.level(0, 0)
				return
			}
			ks := make([]string, 0, v.Len())
			for it := v.MapRange(); it.Next(); {
				ks = append(ks, it.Key().String())
			}
			slices.Sort(ks) // the same map, the same bytes
			for i, k := range ks {
				keys.level(1, min(i, 1))
				keys.str(k)
				vals.level(1, min(i, 1))
				vals.str(v.MapIndex(reflect.ValueOf(k).Convert(t.Key())).String())
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("type %s", t)
}

// Write returns rows as a Parquet file.
func Write[T any](rows []T) ([]byte, error) {
	root, cols, fields, err := schemaOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for _, f := range fields {
			f.write(v.Field(f.index))
		}
	}
	out := []byte("PAR1")
	meta := &thrift{last: []int{0}}
	// FileMetaData: version 1, schema 2, num_rows 3, row_groups 4, created_by 6.
	meta.i32(1, 1)
	var elems []*node
	var flatten func(*node)
	flatten = func(n *node) {
		elems = append(elems, n)
		for _, c := range n.children {
			flatten(c)
		}
	}
	flatten(root)
	meta.list(2, ctStruct, len(elems))
	for i, n := range elems {
		writeElement(meta, n, i == 0)
	}
	meta.i64(3, int64(len(rows)))
	var total, totalCompressed int64
	meta.list(4, ctStruct, 1)
	meta.begin(0) // RowGroup: columns 1, total_byte_size 2, num_rows 3, file_offset 5, total_compressed_size 6, ordinal 7
	meta.list(1, ctStruct, len(cols))
	for _, c := range cols {
		page := c.page()
		z, err := gzipped(page)
		if err != nil {
			return nil, err
		}
		if len(page) > math.MaxInt32 || len(z) > math.MaxInt32 {
			return nil, fmt.Errorf("parquetw: column %s: a page over 2 GiB", strings.Join(c.path, "."))
		}
		h := &thrift{last: []int{0}}
		// PageHeader: type 1, uncompressed size 2, compressed size 3,
		// data_page_header 5 (num_values 1, encoding 2, definition
		// levels' encoding 3, repetition levels' 4).
		h.i32(1, pageData)
		h.i32(2, int32(len(page)))
		h.i32(3, int32(len(z)))
		h.begin(5)
		h.i32(1, int32(c.n))
		h.i32(2, encPlain)
		h.i32(3, encRLE)
		h.i32(4, encRLE)
		h.end()
		h.end()
		offset := int64(len(out))
		out = append(append(out, h.b...), z...)
		size, csize := int64(len(h.b)+len(page)), int64(len(h.b)+len(z))
		total += size
		totalCompressed += csize
		// ColumnChunk: file_offset 2, meta_data 3 (ColumnMetaData: type 1,
		// encodings 2, path_in_schema 3, codec 4, num_values 5,
		// total_uncompressed_size 6, total_compressed_size 7,
		// data_page_offset 9).
		meta.begin(0)
		meta.i64(2, offset)
		meta.begin(3)
		meta.i32(1, int32(c.typ))
		if c.maxDef > 0 || c.maxRep > 0 {
			meta.listI32(2, []int32{encPlain, encRLE})
		} else {
			meta.listI32(2, []int32{encPlain})
		}
		meta.listStr(3, c.path)
		meta.i32(4, codecGzip)
		meta.i64(5, int64(c.n))
		meta.i64(6, size)
		meta.i64(7, csize)
		meta.i64(9, offset)
		meta.end()
		meta.end()
	}
	meta.i64(2, total)
	meta.i64(3, int64(len(rows)))
	meta.i64(5, 4)
	meta.i64(6, totalCompressed)
	meta.field(7, 4) // i16 ordinal 0
	meta.b = append(meta.b, 0)
	meta.end()
	meta.str(6, "jukebox")
	meta.end()
	out = append(out, meta.b...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(meta.b)))
	return append(out, "PAR1"...), nil
}

// writeElement writes n as a SchemaElement: type 1, repetition 3 (not for
// the root), name 4, num_children 5, converted type 6, logical type 10.
func writeElement(t *thrift, n *node, root bool) {
	t.begin(0)
	if n.typ >= 0 {
		t.i32(1, int32(n.typ))
	}
	if !root {
		t.i32(3, int32(n.rep))
	}
	t.str(4, n.name)
	if n.typ < 0 {
		t.i32(5, int32(len(n.children)))
	}
	if n.conv >= 0 {
		t.i32(6, int32(n.conv))
	}
	if n.logical != nil {
		t.begin(10)
		n.logical(t)
		t.end()
	}
	t.end()
}

// page is the column's data page before compression: repetition levels,
// definition levels (each with its length before it), then the values.
func (c *column) page() []byte {
	var b []byte
	if c.maxRep > 0 {
		b = appendLevels(b, c.reps)
	}
	if c.maxDef > 0 {
		b = appendLevels(b, c.defs)
	}
	return append(b, c.values...)
}

// appendLevels writes levels (each 0 or 1) in the RLE/bit-packed hybrid,
// as runs alone, with their length before them.
func appendLevels(b []byte, levels []byte) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	for i := 0; i < len(levels); {
		j := i
		for j < len(levels) && levels[j] == levels[i] {
			j++
		}
		b = binary.AppendUvarint(b, uint64(j-i)<<1)
		b = append(b, levels[i]) // one byte: the levels take a bit
		i = j
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func gzipped(p []byte) ([]byte, error) {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	if _, err := z.Write(p); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
