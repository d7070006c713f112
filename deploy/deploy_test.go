package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testedVersion is the Fluent Bit version the README says the plugin is
// tested with.
func testedVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`Tested with Fluent Bit \*\*([0-9]+\.[0-9]+\.[0-9]+)\*\*`).FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("README names no tested Fluent Bit version (`Tested with Fluent Bit **x.y.z**`)")
	}
	return m[1]
}

// The image the README builds, which the manifests run.
func readmeImage(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile("(?m)^docker build -t (\\S+) \\.").FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("README has no `docker build -t IMAGE .` line")
	}
	return m[1]
}

// dockerfile is the Dockerfile's instructions, continuation lines joined.
type instruction struct {
	cmd  string // upper case
	args string
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// makeOutputs are the files `make -n dist-ARCH` says it writes (-o).
func makeOutputs(t *testing.T, arch, version string) []string {
	t.Helper()
	cmd := exec.Command("make", "-n", "dist-"+arch, "VERSION="+version)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n dist-%s: %v\n%s", arch, err, out)
	}
	var files []string
	for _, m := range regexp.MustCompile(`\s-o (\S+)`).FindAllStringSubmatch(string(out), -1) {
		files = append(files, m[1])
	}
	if len(files) != 2 {
		t.Fatalf("make -n dist-%s writes %v, want the plugin and mongolog", arch, files)
	}
	return files
}

// The Dockerfile pins the Fluent Bit the README names, builds on the Debian
// of that image, copies from its build stage only what make dist makes, and
// installs the plugins file the README shows where the image's default
// configuration and the manifests load it.
func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	version := testedVersion(t)
	args := map[string]string{}
	var froms []string
	var copies []instruction
	var runs []string
	workdir := "/"
	buildDir := ""
	for _, in := range ins {
		switch in.cmd {
		case "ARG":
			if k, v, ok := strings.Cut(in.args, "="); ok && len(froms) == 0 {
				args[k] = v
			}
		case "FROM":
			froms = append(froms, in.args)
		case "WORKDIR":
			workdir = in.args
		case "COPY":
			copies = append(copies, in)
		case "RUN":
			if len(froms) == 1 {
				runs = append(runs, in.args)
				buildDir = workdir
			}
		}
	}
	if len(froms) != 2 {
		t.Fatalf("Dockerfile has stages %q, want a build stage and the Fluent Bit image", froms)
	}
	if got := args["FLUENT_BIT_VERSION"]; got != version {
		t.Errorf("Dockerfile pins Fluent Bit %q, README says it is tested with %s", got, version)
	}
	if froms[1] != "fluent/fluent-bit:${FLUENT_BIT_VERSION}" {
		t.Errorf("final stage FROM %q, want the official image fluent/fluent-bit:${FLUENT_BIT_VERSION}", froms[1])
	}
	// The build stage: Go's image of Debian 13 (trixie), which the official
	// Fluent Bit 4.2 images are built on (distroless cc-debian13), with a
	// Go at least the one go.mod asks for.
	build := regexp.MustCompile(`^--platform=\$BUILDPLATFORM golang:1\.([0-9]+)-trixie AS build$`).FindStringSubmatch(froms[0])
	if build == nil {
		t.Fatalf("build stage FROM %q, want --platform=$BUILDPLATFORM golang:1.N-trixie AS build", froms[0])
	}
	if !strings.HasPrefix(version, "4.2.") {
		t.Errorf("Fluent Bit %s: check which Debian its official image is built on and change the build stage's", version)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go 1\.([0-9]+)`).FindSubmatch(gomod); m == nil {
		t.Error("go.mod has no go line")
	} else if need, _ := strconv.Atoi(string(m[1])); func() int { n, _ := strconv.Atoi(build[1]); return n }() < need {
		t.Errorf("build stage's Go 1.%s is older than go.mod's 1.%d", build[1], need)
	}
	if !slices.ContainsFunc(runs, func(r string) bool { return strings.Contains(r, "make dist-$TARGETARCH ") }) {
		t.Errorf("the build stage does not run make dist-$TARGETARCH: %q", runs)
	}

	var soDest, pluginsSrc, pluginsDest string
	for _, c := range copies {
		f := strings.Fields(c.args)
		if len(f) < 2 {
			t.Errorf("COPY %s", c.args)
			continue
		}
		src, dest := f[len(f)-2], f[len(f)-1]
		if slices.Contains(f, "--from=build") {
			// Every file copied from the build stage is one make dist
			// makes, for each architecture.
			rel, ok := strings.CutPrefix(src, strings.TrimSuffix(buildDir, "/")+"/")
			if !ok {
				t.Errorf("COPY --from=build %s: not under the build stage's WORKDIR %s", src, buildDir)
				continue
			}
			for _, arch := range []string{"amd64", "arm64"} {
				want := strings.ReplaceAll(rel, "${TARGETARCH}", arch)
				outs := makeOutputs(t, arch, "v9.9.9-test")
				if !slices.ContainsFunc(outs, func(o string) bool { ok, _ := path.Match(want, o); return ok }) {
					t.Errorf("COPY --from=build %s: for %s, %s is none of what make dist-%s writes (%v)", src, arch, want, arch, outs)
				}
				if n := strings.Count(strings.Join(outs, "\n"), "linux-"+arch); n != 2 {
					t.Errorf("make dist-%s writes %v", arch, outs)
				}
			}
			if strings.HasSuffix(dest, ".so") {
				soDest = dest
			}
			continue
		}
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("COPY %s: %v", src, err)
		}
		if dest == "/fluent-bit/etc/plugins.conf" {
			pluginsSrc, pluginsDest = src, dest
		}
	}
	if soDest != "/fluent-bit/plugins/out_mongodb.so" {
		t.Errorf("the plugin goes to %q, want /fluent-bit/plugins/out_mongodb.so (as the README says)", soDest)
	}
	if pluginsSrc == "" {
		t.Fatal("the Dockerfile installs no /fluent-bit/etc/plugins.conf (the file the image's configuration and the manifests load)")
	}
	plugins, err := os.ReadFile(filepath.Join("..", pluginsSrc))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[PLUGINS]\n    Path " + soDest + "\n"; string(plugins) != want {
		t.Errorf("%s is %q, want %q: the path the plugin is copied to", pluginsSrc, plugins, want)
	}
	// The README shows that plugins file, byte for byte.
	_, after, ok := strings.Cut(readme(t), "with this plugins file\n(`"+pluginsSrc+"`):\n\n```ini\n")
	if !ok {
		t.Fatalf("README does not show the plugins file %s (\"with this plugins file (`%s`):\" and an ini block)", pluginsSrc, pluginsSrc)
	}
	shown, _, _ := strings.Cut(after, "```\n")
	if shown != string(plugins) {
		t.Errorf("README shows the plugins file as %q, %s holds %q", shown, pluginsSrc, plugins)
	}
	if !strings.Contains(readme(t), "`fluent/fluent-bit:"+version+"`") || !strings.Contains(readme(t), "`"+pluginsDest+"`") {
		t.Errorf("README does not name the image fluent/fluent-bit:%s and where its plugins file is (%s)", version, pluginsDest)
	}
	if img := readmeImage(t); !strings.HasSuffix(img, ":"+version) {
		t.Errorf("README's image %s is not tagged with the Fluent Bit version %s", img, version)
	}
}

// A fluent-bit on PATH, which the end-to-end tests run, is the version the
// README says the plugin is tested with.
func TestFluentBitOnPathIsTheTestedVersion(t *testing.T) {
	fb, err := exec.LookPath("fluent-bit")
	if err != nil {
		t.Skip("no fluent-bit on PATH: the end-to-end tests that need one skip as well")
	}
	out, err := exec.Command(fb, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", fb, err, out)
	}
	m := regexp.MustCompile(`Fluent Bit v([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version printed %q", fb, out)
	}
	if want := testedVersion(t); string(m[1]) != want {
		t.Errorf("fluent-bit on PATH is %s; README says the plugin is tested with %s", m[1], want)
	}
}
