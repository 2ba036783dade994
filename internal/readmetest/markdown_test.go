package readmetest

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// pages are the documents whose snippets the tests check.
var pages = []string{"README.md", "docs/GETTING-STARTED.md"}

// block is one fenced code block of a page.
type block struct {
	page   string
	line   int    // line of the opening fence, 1-based
	lang   string // the fence's info string
	marker string // the last non-blank line before the fence, trimmed
	body   string // the lines between the fences, without a final newline
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// readBlocks returns every fenced block of page, in order.
func readBlocks(t *testing.T, page string) []block {
	t.Helper()
	f, err := os.Open(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []block
		cur     *block
		lines   []string
		prev    string
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		text := sc.Text()
		if cur == nil {
			if lang, ok := strings.CutPrefix(text, "```"); ok {
				cur = &block{page: page, line: lineNum, lang: strings.TrimSpace(lang), marker: prev}
				lines = nil
				continue
			}
			if s := strings.TrimSpace(text); s != "" {
				prev = s
			}
			continue
		}
		if strings.TrimSpace(text) == "```" {
			cur.body = strings.Join(lines, "\n")
			out = append(out, *cur)
			cur, prev = nil, ""
			continue
		}
		lines = append(lines, text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: fence opened and never closed", cur)
	}
	return out
}

var exampleMarker = regexp.MustCompile(`^<!-- example: (\S+) (Example\w*) -->$`)

// Every Go snippet of the pages is the body of an Example that `go test`
// runs and whose output it checks: the snippet cannot drift from the code.
func TestGoSnippetsAreRunExamples(t *testing.T) {
	seen := 0
	for _, page := range pages {
		for _, b := range readBlocks(t, page) {
			if b.lang != "go" {
				continue
			}
			seen++
			m := exampleMarker.FindStringSubmatch(b.marker)
			if m == nil {
				t.Errorf("%s: a ```go block must follow a line <!-- example: DIR ExampleName --> naming the Example it shows; found %q", b, b.marker)
				continue
			}
			body, err := exampleBody(m[1], m[2])
			if err != nil {
				t.Errorf("%s: %v", b, err)
				continue
			}
			if !strings.Contains(body, "// Output:") {
				t.Errorf("%s: %s in %s has no // Output: comment, so go test would compile it but not run it", b, m[2], m[1])
			}
			if got := trimLines(b.body); got != body {
				t.Errorf("%s differs from the body of %s in %s — copy one onto the other.\n--- page:\n%s\n--- %s:\n%s\n--- first difference: %s",
					b, m[2], m[1], got, m[2], body, firstDiff(got, body))
			}
		}
	}
	if seen < 5 {
		t.Errorf("only %d ```go blocks found in %v: the pages were not read", seen, pages)
	}
}

// exampleBody returns the body of the Example function name declared in a
// _test.go file of dir, de-indented by one tab, without its braces.
func exampleBody(dir, name string) (string, error) {
	files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
		if err != nil {
			return "", err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Body.Lbrace).Offset + 1
			end := fset.Position(fn.Body.Rbrace).Offset
			var lines []string
			for _, l := range strings.Split(strings.Trim(string(src[start:end]), "\n"), "\n") {
				lines = append(lines, strings.TrimPrefix(l, "\t"))
			}
			return trimLines(strings.Join(lines, "\n")), nil
		}
	}
	return "", fmt.Errorf("no func %s in %s/*_test.go", name, dir)
}

// trimLines drops trailing blanks of each line and blank lines at the end.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// firstDiff names the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: page %q, example %q", i+1, x, y)
		}
	}
	return "none"
}

// Every block is one the tests know what to do with: a ```go block shows an
// Example, a ```console block is a transcript with its environment, a ```sh
// block is not run (make targets on fixed ports), and nothing else appears.
func TestEveryBlockHasAKnownKind(t *testing.T) {
	for _, page := range pages {
		for _, b := range readBlocks(t, page) {
			switch b.lang {
			case "go", "sh", "text":
			case "console":
				if _, _, err := parseRunMarker(b.marker); err != nil {
					t.Errorf("%s: %v", b, err)
				}
			default:
				t.Errorf("%s: fence language %q; use go (an Example), console (a checked transcript), sh (not run) or text", b, b.lang)
			}
		}
	}
}

var runMarker = regexp.MustCompile(`^<!-- run: (node|cluster|echo-app)( retry)? -->$`)

func parseRunMarker(marker string) (env string, retry bool, err error) {
	m := runMarker.FindStringSubmatch(marker)
	if m == nil {
		return "", false, fmt.Errorf("a ```console block must follow a line <!-- run: node|cluster|echo-app [retry] -->; found %q", marker)
	}
	return m[1], m[2] != "", nil
}
