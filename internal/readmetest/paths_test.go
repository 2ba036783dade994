package readmetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every repository path the pages name exists, every markdown link to a file
// of the repository resolves, and every example program is listed in the
// README: a moved file or a new example shows up here.
func TestNamedPathsExist(t *testing.T) {
	codePath := regexp.MustCompile("`((?:cmd|docs|examples|internal|sdk|cache|hybrid|session|middleware|server|scripts|test|deploy)/[A-Za-z0-9_./-]*)`")
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, page := range pages {
		src, err := os.ReadFile(filepath.Join(root, page))
		must(t, err)
		base := filepath.Dir(filepath.Join(root, page))
		for _, m := range codePath.FindAllStringSubmatch(string(src), -1) {
			if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(m[1], "/"))); err != nil {
				t.Errorf("%s names %s, which does not exist", page, m[1])
			}
		}
		for _, m := range link.FindAllStringSubmatch(string(src), -1) {
			if _, err := os.Stat(filepath.Join(base, m[1])); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, m[1])
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	must(t, err)
	dirs, err := os.ReadDir(filepath.Join(root, "examples"))
	must(t, err)
	for _, d := range dirs {
		if d.IsDir() && !strings.Contains(string(readme), "`examples/"+d.Name()+"`") {
			t.Errorf("README.md does not list examples/%s (section Examples)", d.Name())
		}
	}
}
