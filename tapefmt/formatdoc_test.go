package tapefmt

import (
	"encoding/hex"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests hold FORMAT.md and the code to each other: every number,
// name and table the document gives that the code fixes is read from the
// document and compared with the code. A change to either must come with
// the other.

// formatDoc is FORMAT.md.
func formatDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text under the heading that starts with prefix ("## 2.",
// "### 10.1"), up to the next heading of the same or a higher level.
func section(t *testing.T, doc, prefix string) string {
	t.Helper()
	level := strings.Index(prefix, " ")
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if h := strings.Index(lines[j], " "); strings.HasPrefix(lines[j], "#") && h > 0 && h <= level &&
				strings.Trim(lines[j][:h], "#") == "" {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n")
	}
	t.Fatalf("FORMAT.md has no heading %q", prefix)
	return ""
}

// tables returns the body rows of the markdown tables in text, each row as
// its cells, trimmed; header and separator rows are left out.
func tables(text string) [][][]string {
	var out [][][]string
	var cur [][]string
	for _, l := range append(strings.Split(text, "\n"), "") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if len(cur) > 1 {
				out = append(out, cur[1:]) // the first row is the header
			}
			cur = nil
			continue
		}
		if strings.Trim(l, "|-: ") == "" {
			continue // separator
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		cur = append(cur, cells)
	}
	return out
}

var backticked = regexp.MustCompile("`([^`]+)`")

// codes lists the `code spans` of s, in order.
func codes(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// number reads a figure such as "64", "16 MiB (16,777,216 bytes)" or
// "8 GiB": the first number, commas allowed, times its binary unit.
func number(t *testing.T, s string) int64 {
	t.Helper()
	m := regexp.MustCompile(`^([0-9][0-9,]*)(?: (KiB|MiB|GiB))?`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("FORMAT.md: %q is not a figure", s)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n << map[string]int{"": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
}

func TestFormatDocSizes(t *testing.T) {
	t.Parallel()
	sizes := map[string]int64{"fileHeaderSize": fileHeaderSize, "frameHeaderSize": frameHeaderSize,
		"blobHeaderSize": blobHeaderSize, "frameEntrySize": frameEntrySize, "blobEntrySize": blobEntrySize,
		"footerSize": footerSize}
	seen := map[string]bool{}
	for _, tab := range tables(section(t, formatDoc(t), "## 1.")) {
		for _, row := range tab {
			name := strings.Trim(row[0], "`")
			want, ok := sizes[name]
			if !ok {
				t.Errorf("section 1 names a size %s that format.go does not define", row[0])
				continue
			}
			seen[name] = true
			if got := number(t, row[1]); got != want {
				t.Errorf("section 1: %s is %d bytes, the code says %d", name, got, want)
			}
		}
	}
	for name := range sizes {
		if !seen[name] {
			t.Errorf("section 1 does not give %s", name)
		}
	}
}

// TestFormatDocLayouts checks that each byte layout's rows follow one
// another from offset 0 and end at the structure's size.
func TestFormatDocLayouts(t *testing.T) {
	t.Parallel()
	doc := formatDoc(t)
	for heading, size := range map[string]int{"## 2.": fileHeaderSize, "## 3.": frameHeaderSize,
		"## 4.": blobHeaderSize, "### 6.1": frameEntrySize, "### 6.2": blobEntrySize, "### 6.3": footerSize} {
		layout := tables(section(t, doc, heading))[0]
		end := 0
		for _, row := range layout {
			off, err1 := strconv.Atoi(row[0])
			n, err2 := strconv.Atoi(row[1])
			if err2 != nil {
				break // the payload or stored bytes that follow the header
			}
			if err1 != nil || off != end {
				t.Errorf("%s: field %q at offset %s, want %d", heading, row[3], row[0], end)
			}
			end = off + n
		}
		if end != size {
			t.Errorf("%s: the fields end at %d, the code's size is %d", heading, end, size)
		}
	}
}

func TestFormatDocConstants(t *testing.T) {
	t.Parallel()
	doc := formatDoc(t)
	flat := strings.Join(strings.Fields(doc), " ")
	want := func(what, re string, check func(m []string) bool) {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(flat)
		if m == nil || !check(m) {
			t.Errorf("FORMAT.md: %s: %q does not match the code (found %q)", what, re, m)
		}
	}
	hexOf := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	want("file magic", "\\| magic \\| `([0-9A-F ]+)`", func(m []string) bool {
		return strings.ReplaceAll(m[1], " ", "") == hexOf(fileMagic[:])
	})
	want("footer magic", "magic `JBXINDEX` \\(`([0-9A-F ]+)`\\)", func(m []string) bool {
		return strings.ReplaceAll(m[1], " ", "") == hexOf(footerMagic[:]) && string(footerMagic[:]) == "JBXINDEX"
	})
	want("version", "`([0-9]+)` \\(`Version`\\)", func(m []string) bool { return m[1] == strconv.Itoa(Version) })
	want("frame record type", "`'F'` = `0x([0-9A-F]{2})` \\(`recFrame`\\)", func(m []string) bool {
		return m[1] == hexOf([]byte{recFrame}) && recFrame == 'F'
	})
	want("blob record type", "`'B'` = `0x([0-9A-F]{2})` \\(`recBlob`\\)", func(m []string) bool {
		return m[1] == hexOf([]byte{recBlob}) && recBlob == 'B'
	})
	want("seal context", "context string `([^`]+)`", func(m []string) bool { return m[1] == sealContext })
	want("sealed flag", "bit 0 = sealed \\(`footerSealed`\\)", func([]string) bool { return footerSealed == 1 })
	want("offset mask", "`maxOffset` = 2\\^([0-9]+) − 1", func(m []string) bool { return m[1] == "56" && maxOffset == 1<<56-1 })
	want("seal key", "\\| seal key \\| ([0-9]+)–([0-9]+) bytes \\| `MinKeySize`, `MaxKeySize`", func(m []string) bool {
		return m[1] == strconv.Itoa(MinKeySize) && m[2] == strconv.Itoa(MaxKeySize)
	})
	want("zstd ratio", "decoded length ≤ ([0-9,]+) × stored bytes \\| `maxZstdRatio`", func(m []string) bool {
		return number(t, m[1]) == maxZstdRatio
	})
	want("decode budget", "\\| decode budget \\| ([0-9]+ GiB) or ([0-9,]+) × the file size", func(m []string) bool {
		return number(t, m[1]) == minDecodeBudget && decodeBudget(1<<40) == number(t, m[2])<<40
	})
	want("blob cache", "holds at most ([0-9]+ MiB) .{0,60}\\(`blobCacheBytes`\\)", func(m []string) bool {
		return number(t, m[1]) == blobCacheBytes
	})
	want("next kind", "New kinds take new numbers \\(([0-9]+) and up\\)", func(m []string) bool {
		return m[1] == strconv.Itoa(len(KindNames())+1) && !Kind(len(KindNames())+1).Known()
	})
}

func TestFormatDocLimits(t *testing.T) {
	t.Parallel()
	limits := map[string]int64{"MaxPayload": MaxPayload, "MaxBlobSize": MaxBlobSize, "maxDeltaDepth": maxDeltaDepth,
		"deltaKeyframeEvery": deltaKeyframeEvery, "maxLaneBlob": maxLaneBlob}
	seen := map[string]bool{}
	for _, row := range tables(section(t, formatDoc(t), "## 9."))[0] {
		name, ok := strings.CutPrefix(row[0], "`")
		if !ok {
			continue // a limit without a constant of its own, checked in TestFormatDocConstants
		}
		name = strings.TrimSuffix(name, "`")
		want, ok := limits[name]
		if !ok {
			t.Errorf("section 9 names a limit %s that the code does not define", row[0])
			continue
		}
		seen[name] = true
		if got := number(t, row[1]); got != want {
			t.Errorf("section 9: %s is %d, the code says %d", name, got, want)
		}
	}
	for name := range limits {
		if !seen[name] {
			t.Errorf("section 9 does not give %s", name)
		}
	}
}

func TestFormatDocEncodings(t *testing.T) {
	t.Parallel()
	encs := map[string]int{"encRaw": encRaw, "encZstd": encZstd, "encDelta": encDelta, "encDeltaZstd": encDeltaZstd}
	rows := tables(section(t, formatDoc(t), "### 4.1"))[0]
	if len(rows) != len(encs) {
		t.Errorf("section 4.1 lists %d encodings, the code %d", len(rows), len(encs))
	}
	for _, row := range rows {
		name := strings.Trim(row[1], "`")
		if v, ok := encs[name]; !ok || strconv.Itoa(v) != row[0] {
			t.Errorf("section 4.1: encoding %s = %s, the code has %d (defined: %v)", name, row[0], v, ok)
		}
	}
}

func TestFormatDocKinds(t *testing.T) {
	t.Parallel()
	rows := tables(section(t, formatDoc(t), "### 10.1"))[0]
	if len(rows) != len(KindNames()) {
		t.Errorf("section 10.1 lists %d kinds, the code %d (%v)", len(rows), len(KindNames()), KindNames())
	}
	for _, row := range rows {
		n, err := strconv.Atoi(row[0])
		if err != nil {
			t.Fatalf("section 10.1: kind number %q", row[0])
		}
		k, name := Kind(n), strings.Trim(row[1], "`")
		if !k.Known() || k.String() != name {
			t.Errorf("section 10.1: kind %d is %s, the code says %s", n, name, k)
			continue
		}
		if p, err := ParseKind(name); err != nil || p != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %d", name, p, err, n)
		}
		if typ := payloadType(k); typ.Name() != strings.Trim(row[2], "`") {
			t.Errorf("section 10.1: %s has payload %s, the code %s", name, row[2], typ.Name())
		}
		if k.Boundary() != (row[3] == "yes") {
			t.Errorf("section 10.1: %s boundary %q, the code says %v", name, row[3], k.Boundary())
		}
		if got, want := codes(row[4]), blobKeys(k); !slices.Equal(got, want) {
			t.Errorf("section 10.1: %s names blobs %q, BlobRefs gives %q", name, got, want)
		}
	}
}

// payloadType is the struct type of k's payload.
func payloadType(k Kind) reflect.Type { return reflect.TypeOf(payloadTypes[k]()).Elem() }

// blobKeys lists the JSON keys of the hashes that BlobRefs reports for a
// payload of kind k: each Hash field is set to a hash of its own name.
func blobKeys(k Kind) []string {
	v := reflect.New(payloadType(k)).Elem()
	byHash := map[Hash]string{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch {
		case f.Type == reflect.TypeFor[Hash]():
			h := HashOf([]byte(f.Name))
			v.Field(i).Set(reflect.ValueOf(h))
			byHash[h] = jsonKey(f)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			// a list of entries naming blobs: "files[].body"
			e := reflect.New(f.Type.Elem()).Elem()
			for j := range e.NumField() {
				if ef := e.Type().Field(j); ef.Type == reflect.TypeFor[Hash]() {
					h := HashOf([]byte(f.Name + ef.Name))
					e.Field(j).Set(reflect.ValueOf(h))
					byHash[h] = jsonKey(f) + "[]." + jsonKey(ef)
				}
			}
			v.Field(i).Set(reflect.Append(v.Field(i), e))
		}
	}
	var keys []string
	for _, h := range BlobRefs(v.Interface().(Payload)) {
		keys = append(keys, byHash[h])
	}
	return keys
}

func jsonKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
