package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapeText: every character data.UnsafeRune names, and every byte
// that is not UTF-8, is shown escaped; other text, in any script, as is.
func TestEscapeText(t *testing.T) {
	tests := []struct {
		name, in  string
		keepLines bool
		want      string
	}{
		{"plain", "Acme Calendar", false, "Acme Calendar"},
		{"scripts", "Zoë 日本語 العربية 👩‍💻", false, "Zoë 日本語 العربية 👩‍💻"},
		{"clear screen", "a\x1b[2Jb", false, `a\x1b[2Jb`},
		{"conceal", "\x1b[8mhidden", false, `\x1b[8mhidden`},
		{"forged line", "x\r\nscopes: PROFILE_READ", false, `x\x0d\x0ascopes: PROFILE_READ`},
		{"tab", "a\tb", false, `a\x09b`},
		{"DEL and NUL", "\x7f\x00", false, `\x7f\x00`},
		{"C1 CSI", "a\u009b2J", false, `a\u009b2J`},
		{"raw 0x9b byte", "a\x9b2J", false, `a\x9b2J`},
		{"RLO", "abc\u202Etxt.exe", false, `abc\u202etxt.exe`},
		{"isolates", "\u2066x\u2069", false, `\u2066x\u2069`},
		{"lines kept", "line 1\n\tline 2\x1b[2J", true, "line 1\n\tline 2\\x1b[2J"},
		{"CR not kept", "a\rb", true, `a\x0db`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := escapeText(tc.in, tc.keepLines); got != tc.want {
				t.Fatalf("escapeText(%q, %v) = %q; want %q", tc.in, tc.keepLines, got, tc.want)
			}
		})
	}
}

// TestTextOutputOnePlace: no file of the command but output.go writes
// text by itself (fmt.Print*, cobra's cmd.Print*, fmt.Fprint* to a
// writer, io.WriteString, os.Stdout, os.Stderr): every text printer goes through output.go's
// escaping helpers (textf, fields, table, printList, printError,
// linesWriter). fmt.Fprint* into a local builder (&b) is allowed: it
// builds a string, which is printed through the helpers.
func TestTextOutputOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "output.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "Print", "Printf", "Println", "PrintErr", "PrintErrf", "PrintErrln": // fmt's, and cobra's cmd.Print*
				t.Errorf("%s: .%s writes text past the escaping; use textf, fields or table (output.go)", fset.Position(sel.Pos()), sel.Sel.Name)
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch q := pkg.Name + "." + sel.Sel.Name; q {
			case "io.WriteString":
				t.Errorf("%s: %s writes text past the escaping; use textf, fields or table (output.go)", fset.Position(sel.Pos()), q)
			case "os.Stdout", "os.Stderr":
				if name != "main.go" {
					t.Errorf("%s: %s; write to cmd.OutOrStdout() through output.go's helpers", fset.Position(sel.Pos()), q)
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "fmt" || !strings.HasPrefix(sel.Sel.Name, "Fprint") {
				return true
			}
			if u, ok := call.Args[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
				return true // into a local builder
			}
			t.Errorf("%s: fmt.%s writes text past the escaping; use textf (output.go)", fset.Position(call.Pos()), sel.Sel.Name)
			return true
		})
	}
}
