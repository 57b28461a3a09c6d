package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/tetratelabs/wazero"
	xsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// wasmCache keeps compiled modules in a folder, so a tool is compiled
// once, not once a process: a tool built by Go (2 MB) takes seconds to
// compile, and each `jukebox booth exec` is a process of its own. The
// folder is wasmCacheDir, where wazero keeps a folder per version of
// itself. A binary that does not know wazero's version (a test binary)
// keeps them in memory, as does JUKEBOX_NO_CACHE: a compiled module
// another version wrote must never load. The code there runs in jukebox,
// unconfined: the booth hides the folder from its agent, and refuses to
// let it write a folder that holds it (ownFolders).
var wasmCache = sync.OnceValue(func() wazero.CompilationCache {
	if v := os.Getenv("JUKEBOX_NO_CACHE"); v != "" && v != "0" && v != "false" {
		return wazero.NewCompilationCache()
	}
	dir := os.Getenv("JUKEBOX_WASM_CACHE_DIR")
	if dir == "" && wazeroVersion() != "" {
		dir = wasmCacheDir()
	}
	if dir != "" {
		if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
})

// wasmCacheDir is the folder of compiled WASI tools: JUKEBOX_WASM_CACHE_DIR,
// else jukebox/wasm in the user's cache folder ("" without one).
func wasmCacheDir() string {
	if d := os.Getenv("JUKEBOX_WASM_CACHE_DIR"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return ""
	}
	if base, err := os.UserCacheDir(); err == nil && filepath.IsAbs(base) {
		return filepath.Join(base, "jukebox", "wasm")
	}
	return ""
}

// wazeroVersion is the version of wazero built in, "" when the binary
// does not say (test binaries, builds without module information).
func wazeroVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" && d.Version != "" && d.Version != "(devel)" && d.Replace == nil {
			return d.Version
		}
	}
	return ""
}

// WasmOptions describe a WASI preview 1 tool run inside the booth.
type WasmOptions struct {
	Args   []string // argv, Args[0] being the tool's name
	Env    []string // KEY=VALUE pairs
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// RunWasm runs a WASI preview 1 module in process, with files, the staged
// view of a transaction's workspace (Tx.Files), mounted at "/": what the
// tool reads comes from the view, what it writes is staged in the
// transaction. The tool reaches the staged view and nothing else of the
// transaction, so RunWasm takes Files, not the Tx. It returns the tool's
// exit code.
func RunWasm(ctx context.Context, files *Files, wasm []byte, o WasmOptions) (int, error) {
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(wasmCache()))
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(WasiFS(files), "/")
	cfg := wazero.NewModuleConfig().WithArgs(o.Args...).WithFSConfig(fsc).
		WithStdin(orEmpty(o.Stdin)).WithStdout(orDiscard(o.Stdout)).WithStderr(orDiscard(o.Stderr)).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(randReader{})
	for _, kv := range o.Env {
		if k, v, ok := cut(kv); ok {
			cfg = cfg.WithEnv(k, v)
		}
	}
	// CompileModule (unlike InstantiateWithConfig) leaves the compiled
	// code in wasmCache for the next run.
	mod, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return -1, fmt.Errorf("sandbox: wasm: %w", err)
	}
	_, err = r.InstantiateModule(ctx, mod, cfg)
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		return int(ee.ExitCode()), nil
	}
	if err != nil {
		return -1, fmt.Errorf("sandbox: wasm: %w", err)
	}
	return 0, nil
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return eofReader{}
	}
	return r
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// WasiFS returns files, the staged view of a transaction, as a wazero
// experimental/sys.FS: reads go through the overlay, writes are staged
// (copy-up first), and every path is held to the same escape rules as
// the Files methods.
func WasiFS(files *Files) xsys.FS {
	tx := files.tx
	return &wasiFS{files: files, tx: tx, upper: sysfs.DirFS(tx.upper), lower: sysfs.DirFS(tx.ws.root)}
}

// wasiFS adapts the staged view (Files) to wazero's file system interface.
type wasiFS struct {
	xsys.UnimplementedFS
	files *Files
	tx    *Tx // files.tx, whose lock and view resolved takes
	upper xsys.FS
	lower xsys.FS
}

func toErrno(err error) xsys.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrEscape), errors.Is(err, ErrStatePath), errors.Is(err, ErrForeignState), errors.Is(err, ErrHardLink):
		return xsys.EPERM
	case errors.Is(err, ErrSymlinkLoop):
		return xsys.ELOOP
	case errors.Is(err, ErrInvalidPath):
		return xsys.EINVAL
	case errors.Is(err, ErrClosed):
		return xsys.EBADF
	case errors.Is(err, fs.ErrNotExist):
		return xsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return xsys.EEXIST
	}
	return xsys.UnwrapOSError(err)
}

func osFlags(f xsys.Oflag) int {
	var o int
	switch {
	case f&xsys.O_RDWR != 0:
		o = os.O_RDWR
	case f&xsys.O_WRONLY != 0:
		o = os.O_WRONLY
	}
	for _, m := range [...]struct {
		x xsys.Oflag
		o int
	}{{xsys.O_APPEND, os.O_APPEND}, {xsys.O_CREAT, os.O_CREATE}, {xsys.O_EXCL, os.O_EXCL}, {xsys.O_TRUNC, os.O_TRUNC}} {
		if f&m.x != 0 {
			o |= m.o
		}
	}
	return o
}

func viewName(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	if p == "" {
		return "."
	}
	return p
}
