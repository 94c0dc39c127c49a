package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
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
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg, own := f[0], layer(f[0])
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
