package main

// Field labels that are no JSON path of their kind (a Pod's spec.host, a
// Job's status.successful, an Event's source), from the sources the
// apiserver was built from: every string literal that could be a label in
// the files that register field label conversions
// (AddFieldLabelConversionFunc and their helpers), in the module cache
// copies of k8s.io/kubernetes and of the staging modules it serves with.
// Each is only a candidate: the running apiserver decides.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// labelModules are the modules whose field label conversions the
// apiserver runs, and the folders of each that hold them.
var labelModules = map[string]string{
	"k8s.io/kubernetes":              "pkg",
	"k8s.io/apiextensions-apiserver": "pkg",
	"k8s.io/kube-aggregator":         "pkg",
	"k8s.io/apiserver":               "pkg",
	"k8s.io/apimachinery":            "pkg",
}

var labelLike = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*(\.[a-zA-Z][a-zA-Z0-9]*)*$`)

// sourceLabels returns the candidate labels the sources name.
func sourceLabels() ([]string, error) {
	var paths []string
	for m := range labelModules {
		paths = append(paths, m)
	}
	sort.Strings(paths)
	// This generator's own module pins the apiserver's versions: go list
	// finds their folders in the module cache (downloading none that the
	// build did not already need).
	out, err := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Dir}}"}, paths...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m (the modules' source folders): %w", err)
	}
	found := map[string]bool{}
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, dir, ok := strings.Cut(line, " ")
		if !ok || dir == "" {
			return nil, fmt.Errorf("go list -m: no source folder for %q", line)
		}
		root := filepath.Join(dir, labelModules[mod])
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || name == "vendor" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !bytes.Contains(src, []byte("FieldLabelConversion")) {
				return nil
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && labelLike.MatchString(s) {
						found[s] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", root, err)
		}
	}
	if files == 0 || len(found) == 0 {
		return nil, fmt.Errorf("no field label conversion found in the sources of %v", paths)
	}
	var labels []string
	for l := range found {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	logf("%d candidate labels from %d source files", len(labels), files)
	return labels, nil
}
