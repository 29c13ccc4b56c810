// Command linecount counts a package's non-test lines and its longest
// functions by go/ast (from func to its closing brace), the measure the
// command layer's bounds are stated in:
//
//	go run ./tools/linecount            # the root package
//	go run ./tools/linecount session    # another folder
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	most := flag.Int("most", 8, "how many of the longest functions to list")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "linecount:", err)
		os.Exit(2)
	}
	type fn struct {
		name  string
		lines int
	}
	var fns []fn
	total := 0
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "linecount:", err)
			os.Exit(2)
		}
		total += fset.File(f.Pos()).LineCount()
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				n := fset.Position(fd.End()).Line - fset.Position(fd.Type.Func).Line + 1
				fns = append(fns, fn{filepath.Base(path) + ":" + fd.Name.Name, n})
			}
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	fmt.Printf("%d lines of non-test code in %s\n", total, dir)
	for i := 0; i < *most && i < len(fns); i++ {
		fmt.Printf("%4d  %s\n", fns[i].lines, fns[i].name)
	}
}
