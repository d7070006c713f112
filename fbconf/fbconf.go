// Package fbconf reads Fluent Bit configuration files, classic (with
// @INCLUDE and @SET) or YAML, into their sections, so that a tool can
// validate the plugin's outputs with the plugin's own rules.
package fbconf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// Section is one section of a configuration: an input, a filter, an
// output, the service.
type Section struct {
	Kind  string   // lower case: "service", "input", "filter", "output", ...
	Props conf.Map // keys lower case, ${VAR} substituted
	File  string
	Line  int
}

// Name is the section's plugin name.
func (s Section) Name() string { return s.Props.Get("name") }

// Label names the section for a user: its alias or instance_name when set.
func (s Section) Label() string {
	for _, k := range []string{"alias", "instance_name"} {
		if v := s.Props.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// Where is the section's place in its file.
func (s Section) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Load reads the configuration at path: YAML when it ends in .yaml or .yml,
// classic otherwise. env resolves ${VAR} (nil: the process environment).
func Load(path string, env func(string) string) ([]Section, error) {
	if env == nil {
		env = os.Getenv
	}
	l := &loader{env: env, vars: map[string]string{}, seen: map[string]bool{}}
	if err := l.load(path); err != nil {
		return nil, err
	}
	return l.sections, nil
}

// Outputs returns the output sections of plugin name.
func Outputs(secs []Section, name string) []Section {
	var out []Section
	for _, s := range secs {
		if s.Kind == "output" && strings.EqualFold(s.Name(), name) {
			out = append(out, s)
		}
	}
	return out
}

type loader struct {
	env      func(string) string
	vars     map[string]string // @SET and YAML env
	seen     map[string]bool   // files loaded, against include cycles
	sections []Section
}

func (l *loader) load(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if l.seen[abs] {
		return fmt.Errorf("%s: included twice (an include cycle?)", path)
	}
	l.seen[abs] = true
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		return l.yaml(path, data)
	}
	return l.classic(path, data)
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// expand substitutes ${VAR} from @SET variables, then the environment.
func (l *loader) expand(s string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := l.vars[name]; ok {
			return v
		}
		return l.env(name)
	})
}

// include loads the files pattern names, relative to the including file.
func (l *loader) include(from, pattern string) error {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(from), pattern)
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("%s: include %s: %v", from, pattern, err)
	}
	if len(files) == 0 && !strings.ContainsAny(pattern, "*?[") {
		return fmt.Errorf("%s: include %s: no such file", from, pattern)
	}
	for _, f := range files {
		if err := l.load(f); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) classic(path string, data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur *Section
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(line, "@INCLUDE"):
			if err := l.include(path, strings.TrimSpace(strings.TrimPrefix(line, "@INCLUDE"))); err != nil {
				return err
			}
			cur = nil
		case strings.HasPrefix(line, "@SET"):
			k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "@SET")), "=")
			if !ok {
				return fmt.Errorf("%s:%d: @SET needs KEY=VALUE", path, n)
			}
			l.vars[strings.TrimSpace(k)] = l.expand(strings.TrimSpace(v))
		case strings.HasPrefix(line, "["):
			if !strings.HasSuffix(line, "]") {
				return fmt.Errorf("%s:%d: section header %q lacks its ]", path, n, redactLine(line))
			}
			l.sections = append(l.sections, Section{Kind: strings.ToLower(strings.TrimSpace(line[1 : len(line)-1])),
				Props: conf.Map{}, File: path, Line: n})
			cur = &l.sections[len(l.sections)-1]
		default:
			if cur == nil {
				return fmt.Errorf("%s:%d: %q is outside a section", path, n, redactLine(line))
			}
			k, v := line, ""
			if i := strings.IndexAny(line, " \t"); i >= 0 {
				k, v = line[:i], line[i+1:]
			}
			cur.Props.Set(k, l.expand(strings.TrimSpace(v)))
		}
	}
	return sc.Err()
}

// redactLine is a configuration line fit to quote in an error: the value
// of a key that names a password, secret or token hidden, and the password
// of any connection string in it (see conf.RedactText).
func redactLine(line string) string {
	k, _, hasValue := strings.Cut(strings.ReplaceAll(line, "\t", " "), " ")
	if n := strings.ToLower(k); hasValue && (strings.Contains(n, "passw") || strings.Contains(n, "secret") || strings.Contains(n, "token")) {
		return k + " xxxxx"
	}
	return conf.RedactText(line)
}

// yamlFile is the part of a YAML configuration the plugin's outputs live in.
type yamlFile struct {
	Env      map[string]string `yaml:"env"`
	Includes []string          `yaml:"includes"`
	Service  map[string]any    `yaml:"service"`
	Pipeline struct {
		Inputs  []yaml.Node `yaml:"inputs"`
		Filters []yaml.Node `yaml:"filters"`
		Outputs []yaml.Node `yaml:"outputs"`
	} `yaml:"pipeline"`
}

func (l *loader) yaml(path string, data []byte) error {
	var f yamlFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%s: %s", path, conf.RedactText(err.Error()))
	}
	for k, v := range f.Env {
		l.vars[k] = l.expand(v)
	}
	for _, inc := range f.Includes {
		if err := l.include(path, inc); err != nil {
			return err
		}
	}
	for _, group := range []struct {
		kind  string
		nodes []yaml.Node
	}{{"input", f.Pipeline.Inputs}, {"filter", f.Pipeline.Filters}, {"output", f.Pipeline.Outputs}} {
		for _, n := range group.nodes {
			if n.Kind != yaml.MappingNode {
				return fmt.Errorf("%s:%d: a pipeline %s must be a mapping", path, n.Line, group.kind)
			}
			s := Section{Kind: group.kind, Props: conf.Map{}, File: path, Line: n.Line}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind != yaml.ScalarNode {
					continue // processors and other nested settings
				}
				s.Props.Set(k.Value, l.expand(v.Value))
			}
			l.sections = append(l.sections, s)
		}
	}
	return nil
}
