package e2e

// The README's mongosh snippets run as written: every ```js mongosh block is
// pasted into a real mongosh, alone, against the test server (or MONGO_URI)
// holding the sample log stored through the outputs of the README's
// "Querying from mongosh" configuration, and what it prints is compared
// with the block's `// prints:` lines.

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
)

const (
	readmePath = "../../README.md"
	// mongoshInfo is the info string of a README block that mongosh runs.
	mongoshInfo = "js mongosh"
	// printsMarker starts the output a snippet prints, as comment lines.
	printsMarker = "// prints:"
	// queryingHeading is the README section holding the configuration
	// the snippets assume.
	queryingHeading = "## Querying from mongosh"
	// mongoshPrompt is the prompt the test gives mongosh, stripped from
	// what it prints.
	mongoshPrompt = "mongosh> "
	// mongoshInstall is where make mongosh installs mongosh.
	mongoshInstall = "../../build/mongosh/node_modules/.bin/mongosh"
)

// mongoshLike is a mongosh call: db.coll.find(, db.getCollectionNames(,
// sh.enableSharding(, rs.status(.
var mongoshLike = regexp.MustCompile(`\b(?:db|sh|rs)\.[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\s*\(`)

// mdBlock is a fenced block of the README.
type mdBlock struct {
	info string // the info string after the opening fence
	body string
	line int // the line of the opening fence, from 1
}

// snippet is a block mongosh runs and what it must print.
type snippet struct {
	mdBlock
	want string // the `// prints:` lines without their comment marks
}

// readmeBlocks splits the README into its fenced blocks and the text
// outside them (each line with its number, blocks' lines left empty).
func readmeBlocks(text string) (blocks []mdBlock, outside []string) {
	lines := strings.Split(text, "\n")
	outside = make([]string, len(lines))
	var cur *mdBlock
	var body []string
	for i, l := range lines {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &mdBlock{info: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: i + 1}
			body = nil
		case cur != nil && strings.TrimSpace(l) == "```":
			cur.body = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, l)
		default:
			outside[i] = l
		}
	}
	return blocks, outside
}

// readmeSnippets returns the README's mongosh snippets, and a problem for
// each mongosh call outside them and each snippet without its output.
func readmeSnippets(text string) (snippets []snippet, blocks []mdBlock, problems []string) {
	blocks, outside := readmeBlocks(text)
	for i, l := range outside {
		if m := mongoshLike.FindString(l); m != "" {
			problems = append(problems, fmt.Sprintf("README.md:%d: %q looks like mongosh but is not in a ```%s block, so nothing runs it: %s", i+1, m, mongoshInfo, strings.TrimSpace(l)))
		}
	}
	for _, b := range blocks {
		if b.info != mongoshInfo {
			if m := mongoshLike.FindString(b.body); m != "" {
				problems = append(problems, fmt.Sprintf("README.md:%d: a ```%s block holds %q, which looks like mongosh: mark it ```%s (with its %s lines) so that it runs", b.line, b.info, m, mongoshInfo, printsMarker))
			}
			continue
		}
		want, err := snippetOutput(b.body)
		if err != nil {
			problems = append(problems, fmt.Sprintf("README.md:%d: %v", b.line, err))
			continue
		}
		snippets = append(snippets, snippet{mdBlock: b, want: want})
	}
	return snippets, blocks, problems
}

// snippetOutput is what a snippet says it prints: the rest of its
// `// prints:` line and the comment lines after it, which end the block.
func snippetOutput(body string) (string, error) {
	i := strings.Index(body, printsMarker)
	if i < 0 {
		return "", fmt.Errorf("a ```%s block without %q lines: say what it prints", mongoshInfo, printsMarker)
	}
	if strings.TrimSpace(body[:i]) == "" {
		return "", fmt.Errorf("a ```%s block with nothing to run before %q", mongoshInfo, printsMarker)
	}
	rest := strings.Split(strings.TrimRight(body[i+len(printsMarker):], "\n"), "\n")
	out := []string{rest[0]}
	for _, l := range rest[1:] {
		c, ok := strings.CutPrefix(strings.TrimSpace(l), "//")
		if !ok {
			return "", fmt.Errorf("a ```%s block goes on after its %q lines: %q", mongoshInfo, printsMarker, l)
		}
		out = append(out, c)
	}
	return normalizeOutput(strings.Join(out, "\n")), nil
}

// normalizeOutput makes mongosh's output comparable with the README's:
// prompts dropped, every run of white space one space, so that where
// mongosh breaks its lines does not count.
func normalizeOutput(s string) string {
	s = regexp.MustCompile(`(?m)^(?:`+regexp.QuoteMeta(mongoshPrompt)+`|\.\.\. )+`).ReplaceAllString(s, "")
	return strings.Join(strings.Fields(s), " ")
}

// Every mongosh call in the README is in a ```js mongosh block that says
// what it prints, so TestReadmeMongoshSnippetsRun runs each one.
func TestReadmeMongoshSnippetsMarked(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	snippets, _, problems := readmeSnippets(string(readme))
	for _, p := range problems {
		t.Error(p)
	}
	// The queries of the bucket pattern, the flat one and the recipe for
	// partitioned and templated collections at least.
	if len(snippets) < 5 {
		t.Errorf("%d ```%s blocks in the README, want the recipes of %q (5 at least)", len(snippets), mongoshInfo, queryingHeading)
	}
}

// Every ```js mongosh block of the README, pasted alone into mongosh,
// prints what it says, against the sample log stored through the outputs
// of the README's "Querying from mongosh" configuration.
func TestReadmeMongoshSnippetsRun(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	snippets, blocks, problems := readmeSnippets(string(readme))
	if len(problems) > 0 || len(snippets) == 0 {
		t.Fatalf("the README's mongosh snippets are not all marked (TestReadmeMongoshSnippetsMarked says which): %d problems, %d snippets", len(problems), len(snippets))
	}
	bin := findMongosh(t)
	e := newEnv(t)
	start := time.Now()
	storeQueryingData(t, e, blocks, string(readme))
	t.Logf("sample data stored in %v", time.Since(start).Round(time.Millisecond))

	u, err := url.Parse(e.srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + e.dbName
	home := mongoshHome(t)
	start = time.Now()
	// Each in a mongosh of its own, one at a time: the machines running
	// the tests are small and shared.
	for _, s := range snippets {
		got, err := runMongosh(bin, home, u.String(), s.body)
		if err != nil {
			t.Errorf("README.md:%d: %v", s.line, err)
		} else if got != s.want {
			t.Errorf("README.md:%d: the snippet\n%s\nprints\n  %s\nthe README says\n  %s", s.line, s.body, got, s.want)
		}
	}
	t.Logf("%d snippets run in %v", len(snippets), time.Since(start).Round(time.Millisecond))
}

// findMongosh finds mongosh: $MONGOSH, then make mongosh's install, then
// PATH. Without one the test skips, but under CI=true it fails.
func findMongosh(t *testing.T) string {
	t.Helper()
	var bin string
	if p := os.Getenv("MONGOSH"); p != "" {
		bin = p
	} else if p, err := filepath.Abs(mongoshInstall); err == nil && isExecutable(p) {
		bin = p
	} else if p, err := exec.LookPath("mongosh"); err == nil {
		bin = p
	}
	if bin == "" {
		why := "mongosh not found (not in $MONGOSH, build/mongosh or PATH): make mongosh installs it from npm"
		if os.Getenv("CI") == "true" {
			t.Fatal(why + "; CI=true, so the README's mongosh snippets must run")
		}
		t.Skip(why)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	t.Logf("mongosh %s (%s)", strings.TrimSpace(string(out)), bin)
	return bin
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// mongoshHome is a home of mongosh's own for the test: no telemetry, the
// test's prompt, nothing of the user's.
func mongoshHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(home, ".mongodb", "mongosh"), 0o700))
	must(os.WriteFile(filepath.Join(home, ".mongodb", "mongosh", "config"), []byte(`{"enableTelemetry":false}`), 0o600))
	must(os.WriteFile(filepath.Join(home, ".mongoshrc.js"), []byte(fmt.Sprintf("prompt = %q\n", mongoshPrompt)), 0o600))
	return home
}

// runMongosh pastes code into mongosh connected to uri, as a user would,
// and returns what it printed, normalised.
func runMongosh(bin, home, uri, code string) (string, error) {
	// mongosh takes 3 to 8 s to start on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--quiet", uri)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader(code)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mongosh: %v\n%s", err, out.String())
	}
	return normalizeOutput(out.String()), nil
}

// storeQueryingData stores what the README's "Querying from mongosh"
// configuration stores: the lines of each tail input's file, as Fluent Bit
// reads them ({log: line}, under the input's tag), flushed in chunks of
// 1000 records to every mongodb output whose Match takes the tag, with
// that output's keys, into e's server and database.
func storeQueryingData(t *testing.T, e *env, blocks []mdBlock, readme string) {
	t.Helper()
	from := strings.Index(readme, "\n"+queryingHeading+"\n")
	if from < 0 {
		t.Fatalf("the README has no section %q", queryingHeading)
	}
	line := strings.Count(readme[:from+1], "\n") + 1
	var cfg *mdBlock
	for i, b := range blocks {
		if b.line > line && b.info == "ini" {
			cfg = &blocks[i]
			break
		}
	}
	if cfg == nil {
		t.Fatalf("no ```ini block after %q: the configuration the snippets assume", queryingHeading)
	}
	file := writeFile(t, "querying.conf", []byte(cfg.body))
	secs, err := fbconf.Load(file, func(string) string { return "" })
	if err != nil {
		t.Fatalf("README.md:%d: %v", cfg.line, err)
	}
	outputs := fbconf.Outputs(secs, "mongodb")
	if len(outputs) == 0 {
		t.Fatalf("README.md:%d: no mongodb output", cfg.line)
	}
	// Fluent Bit initialises every output before the first flush.
	ids := make([]string, len(outputs))
	for i, o := range outputs {
		props := map[string]string{}
		for k, v := range o.Props {
			if !conf.Reserved(k) {
				props[k] = v
			}
		}
		props["uri"], props["database"] = e.srv.URI, e.dbName
		ids[i] = fmt.Sprintf("querying%d", i)
		e.init(ids[i], props)
	}
	ingest := time.Date(2024, 6, 1, 10, 5, 0, 0, time.UTC)
	inputs := 0
	for _, in := range secs {
		if in.Kind != "input" || !strings.EqualFold(in.Name(), "tail") {
			continue
		}
		inputs++
		tag := in.Props.Get("tag")
		data, err := os.ReadFile(filepath.Join("../..", in.Props.Get("path")))
		if err != nil {
			t.Fatalf("README.md:%d: the tail input's file: %v", cfg.line, err)
		}
		var chunks []string
		var recs [][]byte
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		for i, l := range lines {
			recs = append(recs, record(t, ingest, kv{"log", l}))
			if len(recs) == 1000 || i == len(lines)-1 {
				chunks = append(chunks, chunkFile(t, t.TempDir(), fmt.Sprintf("chunk-%d", len(chunks)), recs...))
				recs = nil
			}
		}
		for i, o := range outputs {
			if ok, err := path.Match(o.Props.Get("match"), tag); err != nil || !ok {
				continue
			}
			for _, c := range chunks {
				e.mustFlush(ids[i], tag, c)
			}
		}
	}
	if inputs == 0 {
		t.Fatalf("README.md:%d: no tail input: the snippets' data", cfg.line)
	}
	for _, id := range ids {
		e.exit(id)
	}
}
