module github.com/jukebox-os/jukebox/bench

go 1.26.8

require (
	github.com/jukebox-os/jukebox v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v4 v4.0.0
	gopkg.in/dnaeon/go-vcr.v4 v4.0.8
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/clipperhouse/stringish v0.1.1 // indirect
	github.com/clipperhouse/uax29/v2 v2.5.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/mattn/go-runewidth v0.0.19 // indirect
	github.com/sergi/go-diff v1.4.0 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)

// The bench programs measure the code in this repository as it is, not a
// release of it.
replace github.com/jukebox-os/jukebox => ../
