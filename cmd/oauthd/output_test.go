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

// TestTextOutputOnePlace: no file of cmd's commands (oauthd,
// oauthd-bench, and the packages of cmd/internal) but cmd/internal/clitext
// and output.go writes text by itself (fmt.Print*, cobra's cmd.Print*,
// fmt.Fprint* to a writer, io.WriteString, os.Stdout, os.Stderr): every
// text printer goes through the escaping helpers (clitext's Textf,
// Fields, JSON, Lines, PrintError; output.go's table, printList).
// fmt.Fprint* into a local builder (&b) is allowed: it builds a string,
// which is printed through the helpers.
func TestTextOutputOnePlace(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../oauthd-bench/*.go", "../internal/*/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 60 {
		t.Fatalf("found %d files of cmd; want all of them", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "output.go" || filepath.Dir(name) == filepath.Join("..", "internal", "clitext") {
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
				t.Errorf("%s: .%s writes text past the escaping; use clitext.Textf, clitext.Fields or table (output.go)", fset.Position(sel.Pos()), sel.Sel.Name)
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch q := pkg.Name + "." + sel.Sel.Name; q {
			case "io.WriteString":
				t.Errorf("%s: %s writes text past the escaping; use clitext.Textf, clitext.Fields or table (output.go)", fset.Position(sel.Pos()), q)
			case "os.Stdout", "os.Stderr":
				if filepath.Base(name) != "main.go" {
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
			t.Errorf("%s: fmt.%s writes text past the escaping; use clitext.Textf", fset.Position(call.Pos()), sel.Sel.Name)
			return true
		})
	}
}
