package parquetw

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// row has a column of every kind the writer knows.
type row struct {
	S     string            `parquet:"s"`
	Tags  map[string]string `parquet:"tags"`
	T     time.Time         `parquet:"t,timestamp(microsecond)"`
	I64   int64             `parquet:"i64"`
	F     float64           `parquet:"f"`
	B     bool              `parquet:"b"`
	OptF  *float64          `parquet:"opt_f,optional"`
	I32   int32             `parquet:"i32"`
	OptI  *int32            `parquet:"opt_i,optional"`
	List  []string          `parquet:"list,list"`
	Plain string            // no tag: named as the field
	Skip  string            `parquet:"-"`
	inner int               //nolint:unused // unexported: not a column
}

func rows(n int) []row {
	out := make([]row, n)
	for i := range out {
		r := row{S: strings.Repeat("ü", i%4), Plain: "p", I64: int64(i) * -123456789, F: float64(i) / 3, B: i%3 == 0,
			I32: int32(-i), T: time.Unix(int64(i)*1000-5000, int64(i)*1000).UTC(), Tags: map[string]string{},
			List: nil}
		if i%2 == 0 {
			f := -float64(i)
			r.OptF = &f
		}
		if i%5 == 1 {
			v := int32(i * 7)
			r.OptI = &v
		}
		for k := range i % 4 {
			r.Tags[string(rune('z'-k))] = strings.Repeat("v", k)
			r.List = append(r.List, strings.Repeat("e", k))
		}
		if i%7 == 3 {
			r.List = []string{} // empty, as nil
		}
		out[i] = r
	}
	return out
}

// TestRoundTrip: what Write writes, parquet-go reads back as it was
// (nil and empty lists and maps alike empty), for a row, a page of
// booleans not a multiple of 8, and lists longer than a short header.
func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 9, 40, 1000} {
		in := rows(n)
		data, err := Write(in)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%d rows: parquet-go cannot open the file: %v", n, err)
		}
		if f.NumRows() != int64(n) {
			t.Errorf("%d rows: the file says %d", n, f.NumRows())
		}
		want := parquet.SchemaOf(row{}).String()
		if got := f.Schema().String(); got != want {
			t.Errorf("%d rows: schema\n%s\nwant parquet-go's\n%s", n, got, want)
		}
		r := parquet.NewGenericReader[row](bytes.NewReader(data))
		got := make([]row, n+1)
		k, err := r.Read(got)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("%d rows: read: %v", n, err)
		}
		if k != n {
			t.Fatalf("%d rows: read %d", n, k)
		}
		for i := range n {
			w := in[i]
			if len(w.List) == 0 {
				w.List = nil
			}
			g := got[i]
			if len(g.List) == 0 {
				g.List = nil
			}
			if len(g.Tags) == 0 {
				g.Tags = map[string]string{}
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%d rows: row %d\n got %+v\nwant %+v", n, i, g, w)
				break
			}
		}
	}
}

// TestSpecialFloats: NaN, infinities and -0 keep their bits.
func TestSpecialFloats(t *testing.T) {
	in := []row{{F: math.NaN()}, {F: math.Inf(-1)}, {F: math.Copysign(0, -1)}, {F: math.MaxFloat64}}
	data, err := Write(in)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]row, len(in))
	if _, err := parquet.NewGenericReader[row](bytes.NewReader(data)).Read(got); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	for i := range in {
		if math.Float64bits(got[i].F) != math.Float64bits(in[i].F) {
			t.Errorf("row %d: %v, want %v", i, got[i].F, in[i].F)
		}
	}
}

// TestRefusesWhatItCannotWrite: a type or tag it does not know is an
// error naming the field, not a file.
func TestRefusesWhatItCannotWrite(t *testing.T) {
	type uintRow struct {
		U uint64 `parquet:"u"`
	}
	type badTag struct {
		S string `parquet:"s,zstd"`
	}
	type intList struct {
		L []int64 `parquet:"l,list"`
	}
	type bareTime struct {
		T time.Time `parquet:"t"`
	}
	for name, write := range map[string]func() ([]byte, error){
		"uintRow.U":    func() ([]byte, error) { return Write([]uintRow{{}}) },
		"badTag.S":     func() ([]byte, error) { return Write([]badTag{{}}) },
		"intList.L":    func() ([]byte, error) { return Write([]intList{{}}) },
		"bareTime.T":   func() ([]byte, error) { return Write([]bareTime{{}}) },
		"not a struct": func() ([]byte, error) { return Write([]int{1}) },
	} {
		if _, err := write(); err == nil || (name != "not a struct" && !strings.Contains(err.Error(), name)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
