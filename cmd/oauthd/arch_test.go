package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers are oauthd's top-level packages, lowest first: a package may
// import its own layer and the layers below, never one above
// (docs/DESIGN.md, "Packages and who owns what"). scripts/ holds
// development tools that stand beside the binary; docs/examples holds
// programs the guides quote (the platform's side of the login handover).
var layers = []string{"data", "keys", "issuer", "consent", "cmd", "scripts", "docs"}

// layer returns the rank of an oauthd import path, or -1 for another
// module's package.
func layer(path string) int {
	rest, ok := strings.CutPrefix(path, "oauthd/")
	if !ok {
		return -1
	}
	top, _, _ := strings.Cut(rest, "/")
	for i, l := range layers {
		if l == top {
			return i
		}
	}
	return -1
}

// TestImportsPointDownward lists every package of the module with its
// imports (its tests' too) and fails on any that reaches a layer above
// its own, so the picture in docs/DESIGN.md stays true.
func TestImportsPointDownward(t *testing.T) {
	out, err := goList("-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"oauthd/...")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := 0
	listed := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg, own := f[0], layer(f[0])
		listed[pkg] = true
		if own < 0 {
			t.Errorf("package %s is outside the layers %v: put it under one of them", pkg, layers)
			continue
		}
		pkgs++
		for _, imp := range f[1:] {
			if l := layer(imp); l > own {
				t.Errorf("%s (layer %s) imports %s (layer %s): imports point downward (%s); move the shared part down",
					pkg, layers[own], imp, layers[l], strings.Join(reverse(layers), " → "))
			}
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list named only %d packages; want the whole module", pkgs)
	}
	// The test-only end-to-end package is checked as well: its tests'
	// imports are on the lines above.
	for _, pkg := range []string{"oauthd/cmd/oauthd", "oauthd/cmd/oauthd/e2e", "oauthd/cmd/oauthd-bench", "oauthd/cmd/oauthd-bench/internal/loadgen"} {
		if !listed[pkg] {
			t.Errorf("go list did not name %s; the check must cover it", pkg)
		}
	}
}

// TestEndToEndApart keeps the split of docs/DESIGN.md "Where a test goes":
// cmd/oauthd/e2e is tests only (plus its doc.go), so nothing can import it
// and it can reach package main only through the built binary; and
// package main's tests drive no browser (a browser test starts the binary:
// it belongs in e2e, which -short skips).
func TestEndToEndApart(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .GoFiles " "}} | {{join .TestImports " "}}`,
		"oauthd/cmd/oauthd", "oauthd/cmd/oauthd/e2e").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		head, imports, _ := strings.Cut(strings.TrimSpace(line), " | ")
		f := strings.Fields(head)
		if len(f) == 0 {
			continue
		}
		seen++
		switch pkg, files := f[0], f[1:]; pkg {
		case "oauthd/cmd/oauthd/e2e":
			if len(files) != 1 || files[0] != "doc.go" {
				t.Errorf("%s has non-test files %v; want doc.go alone: its helpers are _test.go files", pkg, files)
			}
		case "oauthd/cmd/oauthd":
			for _, imp := range strings.Fields(imports) {
				if imp == "github.com/chromedp/chromedp" {
					t.Errorf("a test of package main imports %s: a browser test starts the binary, so it goes in cmd/oauthd/e2e", imp)
				}
			}
		}
	}
	if seen != 2 {
		t.Fatalf("go list named %d of the 2 packages:\n%s", seen, out)
	}
}

// goList runs `go list args...` and returns its output; its error carries
// what go list said on stderr (a package that does not build, a bad
// import), not only its exit status.
func goList(args ...string) ([]byte, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("go list: %w\n%s", err, bytes.TrimSpace(ee.Stderr))
	}
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	return out, nil
}

// TestGoListSaysWhy: go list's failure reaches the test's message.
func TestGoListSaysWhy(t *testing.T) {
	_, err := goList("oauthd/no/such/package")
	if err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "no/such/package") {
		t.Fatalf("goList(missing package) = %v; want the exit status and what go list said about the package", err)
	}
}

func reverse(s []string) []string {
	r := make([]string, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

// backendPackages are the packages that hold a backend (a data.Store over
// a database). data/cache wraps one and is not one.
var backendPackages = map[string]bool{"oauthd/data/bolt": true, "oauthd/data/postgres": true, "oauthd/data/memory": true}

// TestOneBackendBoundary fails when a non-test file of cmd other than
// cmd/internal/backend/backend.go imports a backend package (docs/DESIGN.md "One
// backend boundary"), and when a package of data/ implements data.Store
// without being listed here as a backend (or being the cache).
func TestOneBackendBoundary(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if backendPackages[p] && filepath.ToSlash(path) != "../internal/backend/backend.go" {
				t.Errorf("%s imports %s: only cmd/internal/backend/backend.go knows the backends; open the database with backend.Open and use what it offers", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 30 {
		t.Fatalf("read %d files of cmd; want all of them", files)
	}

	impl, err := filepath.Glob("../../data/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range impl {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pkg := "oauthd/data/" + filepath.Base(filepath.Dir(path))
		if strings.Contains(string(b), "var _ data.Store = ") && !backendPackages[pkg] && pkg != "oauthd/data/cache" {
			t.Errorf("%s implements data.Store: add it to backendPackages (and its opener to cmd/internal/backend/backend.go)", pkg)
		}
	}
}

// maxCmdLines bounds a non-test file of cmd (docs/DESIGN.md: one command
// per file, wiring only): a longer one holds more than one subject.
const maxCmdLines = 300

// TestCmdFilesShort fails on a non-test file of cmd longer than
// maxCmdLines.
func TestCmdFilesShort(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > maxCmdLines {
			t.Errorf("%s has %d lines; split it by subject to at most %d", path, n, maxCmdLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
