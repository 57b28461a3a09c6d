package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// JUnit XML as GitHub Actions, GitLab and Jenkins read it: one suite, a
// test case per tape; a divergence or a strict mismatch is a failure, a
// tape that does not read or an agent that could not run an error.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes the results to path, whole or not at all.
func writeJUnit(path string, results []testResult, took time.Duration) error {
	s := junitSuite{Name: "jukebox test", Tests: len(results), Time: fmt.Sprintf("%.3f", took.Seconds())}
	for _, r := range results {
		c := junitCase{Name: r.Tape, ClassName: "jukebox." + strings.TrimSuffix(filepath.Base(r.Tape), ".jbx"), Time: fmt.Sprintf("%.3f", r.Seconds)}
		p := &junitProblem{Message: r.Verdict + ": " + r.Where, Type: r.Verdict, Text: xmlSafe(r.Output)}
		switch r.Verdict {
		case "pass":
		case "skipped":
			c.Skipped = &junitSkipped{Message: r.Where}
			s.Skipped++
		case "diverged", "differs":
			c.Failure = p
			s.Failures++
		default:
			c.Error = p
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	out, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append([]byte(xml.Header), append(out, '\n')...))
}

// xmlSafe drops what XML 1.0 cannot hold (control characters but tab and
// newlines): an agent's output may have anything.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF {
			return r
		}
		return -1
	}, s)
}

// writeFileAtomic writes data to path through a temporary file beside it.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // reports/junit.xml, say
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
