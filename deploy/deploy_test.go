package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// What the tests stand in for what a cluster gives a pod: the node's name
// (downward API) and a Secret's value.
const (
	nodeName  = "node-7"
	secretURI = "mongodb://fluentbit:secret@mongo-0.mongo:27017/?replicaSet=rs0"
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

// makeCommand is make with args in the repository's root, free of the
// flags of a make this test may run under (make test).
func makeCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("make", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=")
	return cmd
}

// makeOutputs are the files `make -n dist-ARCH` says it writes (-o).
func makeOutputs(t *testing.T, arch, version string) []string {
	t.Helper()
	cmd := makeCommand("-n", "dist-"+arch, "VERSION="+version)
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

// pod is what the checks need of a pod spec, from a manifest or the chart's values.
type pod struct {
	where       string
	image       string
	env         []envVar
	mounts      []mount
	volumes     map[string]map[string]any // by name: the volume's source
	readOnlyFS  bool
	ports       []int
	annotations map[string]string
	files       map[string]string // the configuration's files, by name
	config      string            // the main configuration file's name
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type mount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type volume struct {
	Name      string         `yaml:"name"`
	HostPath  map[string]any `yaml:"hostPath"`
	EmptyDir  map[string]any `yaml:"emptyDir"`
	ConfigMap map[string]any `yaml:"configMap"`
}

func volumes(vs []volume) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, v := range vs {
		switch {
		case v.HostPath != nil:
			out[v.Name] = map[string]any{"hostPath": v.HostPath}
		case v.EmptyDir != nil:
			out[v.Name] = map[string]any{"emptyDir": v.EmptyDir}
		case v.ConfigMap != nil:
			out[v.Name] = map[string]any{"configMap": v.ConfigMap}
		default:
			out[v.Name] = map[string]any{}
		}
	}
	return out
}

type port struct {
	ContainerPort int `yaml:"containerPort"`
}

type securityContext struct {
	ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
}

type container struct {
	Name            string          `yaml:"name"`
	Image           string          `yaml:"image"`
	Args            []string        `yaml:"args"`
	Env             []envVar        `yaml:"env"`
	Ports           []port          `yaml:"ports"`
	VolumeMounts    []mount         `yaml:"volumeMounts"`
	SecurityContext securityContext `yaml:"securityContext"`
}

// manifestPods reads every document of every manifest under dir: the
// DaemonSets' containers, with the ConfigMaps their volumes mount.
func manifestPods(t *testing.T, dir string) []pod {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	type doc struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"metadata"`
				Spec struct {
					ServiceAccountName string      `yaml:"serviceAccountName"`
					Containers         []container `yaml:"containers"`
					Volumes            []volume    `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	var docs []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(false)
		for {
			var d doc
			err := dec.Decode(&d)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if d.Kind == "" {
				t.Errorf("%s: a document without a kind", f)
			}
			docs = append(docs, d)
		}
	}
	configMaps := map[string]map[string]string{}
	accounts := map[string]bool{}
	for _, d := range docs {
		switch d.Kind {
		case "ConfigMap":
			configMaps[d.Metadata.Name] = d.Data
		case "ServiceAccount":
			accounts[d.Metadata.Name] = true
		}
	}
	var pods []pod
	for _, d := range docs {
		if d.Kind != "DaemonSet" {
			continue
		}
		spec := d.Spec.Template.Spec
		if sa := spec.ServiceAccountName; sa != "" && !accounts[sa] {
			t.Errorf("DaemonSet %s runs as ServiceAccount %s, which no manifest creates", d.Metadata.Name, sa)
		}
		for _, c := range spec.Containers {
			p := pod{where: "DaemonSet " + d.Metadata.Name + " container " + c.Name, image: c.Image, env: c.Env, mounts: c.VolumeMounts,
				volumes: volumes(spec.Volumes), readOnlyFS: c.SecurityContext.ReadOnlyRootFilesystem,
				annotations: d.Spec.Template.Metadata.Annotations, files: map[string]string{}}
			for _, pt := range c.Ports {
				p.ports = append(p.ports, pt.ContainerPort)
			}
			// The configuration: the --config file, in the ConfigMap its
			// folder is mounted from.
			var config string
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--config="); ok {
					config = v
				}
			}
			for _, m := range c.VolumeMounts {
				cm, ok := p.volumes[m.Name]["configMap"]
				if !ok || filepath.Dir(config) != m.MountPath {
					continue
				}
				name, _ := cm.(map[string]any)["name"].(string)
				data, ok := configMaps[name]
				if !ok {
					t.Fatalf("%s mounts ConfigMap %q, which no manifest holds", p.where, name)
				}
				for k, v := range data {
					p.files[k] = v
				}
				p.config = filepath.Base(config)
			}
			if p.config == "" || p.files[p.config] == "" {
				t.Fatalf("%s: its --config %q is in no ConfigMap it mounts", p.where, config)
			}
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		t.Fatalf("no DaemonSet in %s", dir)
	}
	return pods
}

// chartPod reads values for the official Fluent Bit chart: its
// fluent-bit.conf is the chart's (config.service, inputs, filters and
// outputs, in that order, through tpl, which must find nothing to expand),
// mounted at /fluent-bit/etc/conf as the chart does.
func chartPod(t *testing.T, file string) pod {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Kind  string `yaml:"kind"`
		Image struct {
			Repository string `yaml:"repository"`
			Tag        string `yaml:"tag"`
		} `yaml:"image"`
		Env         []envVar          `yaml:"env"`
		MetricsPort int               `yaml:"metricsPort"`
		ExtraPorts  []port            `yaml:"extraPorts"`
		PodAnnots   map[string]string `yaml:"podAnnotations"`
		Security    securityContext   `yaml:"securityContext"`
		Volumes     []volume          `yaml:"daemonSetVolumes"`
		Mounts      []mount           `yaml:"daemonSetVolumeMounts"`
		Config      struct {
			Service    string            `yaml:"service"`
			Inputs     string            `yaml:"inputs"`
			Filters    string            `yaml:"filters"`
			Outputs    string            `yaml:"outputs"`
			ExtraFiles map[string]string `yaml:"extraFiles"`
		} `yaml:"config"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if v.Kind != "DaemonSet" {
		t.Errorf("%s: kind %q, want DaemonSet", file, v.Kind)
	}
	p := pod{where: file, image: v.Image.Repository + ":" + v.Image.Tag, env: v.Env, mounts: v.Mounts, volumes: volumes(v.Volumes),
		readOnlyFS: v.Security.ReadOnlyRootFilesystem, annotations: v.PodAnnots, files: map[string]string{}, config: "fluent-bit.conf"}
	p.ports = append(p.ports, v.MetricsPort)
	for _, pt := range v.ExtraPorts {
		p.ports = append(p.ports, pt.ContainerPort)
	}
	for k, f := range v.Config.ExtraFiles {
		p.files[k] = f
	}
	var conf strings.Builder
	for _, part := range []string{v.Config.Service, v.Config.Inputs, v.Config.Filters, v.Config.Outputs} {
		if strings.Contains(part, "{{") {
			t.Errorf("%s: a config part holds a template the test does not expand: %q", file, part)
		}
		conf.WriteString(part + "\n")
	}
	p.files[p.config] = conf.String()
	// The chart mounts its ConfigMap at /fluent-bit/etc/conf.
	p.mounts = append(p.mounts, mount{Name: "config", MountPath: "/fluent-bit/etc/conf", ReadOnly: true})
	p.volumes["config"] = map[string]any{"configMap": map[string]any{}}
	return p
}

// environment is what Fluent Bit in the pod sees: its env, with the
// downward API's node name and the Secret's value stood in for; secrets
// names the Secret behind each variable.
func (p pod) environment(t *testing.T) (env map[string]string, secrets map[string]string) {
	t.Helper()
	env, secrets = map[string]string{}, map[string]string{}
	for _, e := range p.env {
		switch {
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env[e.Name] = nodeName
		case e.ValueFrom.FieldRef != nil:
			t.Errorf("%s: env %s from field %s, which the test does not stand in for", p.where, e.Name, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = secretURI
			secrets[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			env[e.Name] = e.Value
		}
	}
	return env, secrets
}

// writable reports whether dir is inside a volume mounted writable.
func (p pod) writable(dir string) bool {
	for _, m := range p.mounts {
		if !m.ReadOnly && (dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) {
			_, host := p.volumes[m.Name]["hostPath"]
			_, empty := p.volumes[m.Name]["emptyDir"]
			return host || empty
		}
	}
	return false
}

// checkPod runs the pod's Fluent Bit configuration through mongolog check
// (the function the command calls) with the pod's environment, and holds
// the pod to what the plugin needs of it.
func checkPod(t *testing.T, p pod) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range p.files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env, secrets := p.environment(t)
	getenv := func(k string) string { return env[k] }
	confPath := filepath.Join(dir, p.config)
	var out bytes.Buffer
	problems, err := mongolog.Check(&out, confPath, getenv)
	if err != nil {
		t.Fatalf("%s: mongolog check: %v", p.where, err)
	}
	// The one warning allowed: metrics_listen on every interface, which
	// in a pod without the host's network are the pod's own (Prometheus
	// scrapes the pod's address).
	var warnings []string
	for _, l := range strings.Split(out.String(), "\n") {
		if w, ok := strings.CutPrefix(strings.TrimSpace(l), "warning: "); ok && !strings.HasPrefix(w, "metrics_listen 0.0.0.0:") {
			warnings = append(warnings, w)
		}
	}
	if problems != 0 || len(warnings) > 0 || !strings.Contains(out.String(), "output mongodb: ok") {
		t.Errorf("%s: mongolog check found %d problems:\n%s", p.where, problems, out.String())
	}

	if want := readmeImage(t); p.image != want {
		t.Errorf("%s: image %q, want the one the README builds, %s", p.where, p.image, want)
	}
	if !p.readOnlyFS {
		t.Errorf("%s: readOnlyRootFilesystem is not true", p.where)
	}
	secs, err := fbconf.Load(confPath, getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.Kind == "service" {
			if pf := s.Props.Get("plugins_file"); pf != "/fluent-bit/etc/plugins.conf" {
				t.Errorf("%s: Plugins_File %q, want the image's /fluent-bit/etc/plugins.conf", p.where, pf)
			}
			if sp := s.Props.Get("storage.path"); sp == "" || !p.writable(sp) {
				t.Errorf("%s: storage.path %q is not in a writable volume", p.where, sp)
			}
		}
		if s.Kind == "input" && s.Props.Get("db") != "" && !p.writable(s.Props.Get("db")) {
			t.Errorf("%s: the %s input's DB %s is not in a writable volume", p.where, s.Name(), s.Props.Get("db"))
		}
	}
	outs := fbconf.Outputs(secs, mongolog.PluginName)
	if len(outs) == 0 {
		t.Fatalf("%s: no mongodb output", p.where)
	}
	for _, o := range outs {
		c, err := conf.Parse(o.Props, getenv, nil)
		if err != nil {
			t.Fatalf("%s: %v", p.where, err)
		}
		if c.AgentID != nodeName {
			t.Errorf("%s: agent_id is %q in the pod, want the node's name %q (agent_id ${NODE_NAME}, NODE_NAME from spec.nodeName)", p.where, c.AgentID, nodeName)
		}
		if c.URISource != "uri_env" && c.URISource != "uri_file" {
			t.Errorf("%s: the connection string comes from %s, not a Secret", p.where, c.URISource)
		}
		if c.URISource == "uri_env" && secrets[o.Props.Get("uri_env")] == "" {
			t.Errorf("%s: uri_env %s is not a variable from a Secret", p.where, o.Props.Get("uri_env"))
		}
		if !p.writable(c.LockDir) {
			t.Errorf("%s: lock_dir %s is not in a writable hostPath or emptyDir volume (the root file system is read-only)", p.where, c.LockDir)
		}
		if rl := strings.ToLower(o.Props.Get("retry_limit")); rl != "no_limits" {
			t.Errorf("%s: Retry_Limit %q, want no_limits", p.where, rl)
		}
		_, port, _ := strings.Cut(c.MetricsListen, ":")
		n, _ := strconv.Atoi(port)
		if n == 0 || !slices.Contains(p.ports, n) {
			t.Errorf("%s: metrics_listen %q is not on a container port (%v)", p.where, c.MetricsListen, p.ports)
		}
		if p.annotations["prometheus.io/scrape"] != "true" || p.annotations["prometheus.io/port"] != port || p.annotations["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: Prometheus annotations %v, want scrape true, port %s, path /metrics", p.where, p.annotations, port)
		}
	}
	// The README says how to make the Secret the pod reads.
	for _, ref := range secrets {
		name, key, _ := strings.Cut(ref, "/")
		if !strings.Contains(readme(t), "create secret generic "+name+" --from-literal="+key+"=") {
			t.Errorf("README does not show how to create Secret %s with key %s", name, key)
		}
	}
}

// The Kubernetes manifests: a DaemonSet whose Fluent Bit configuration
// passes mongolog check in its pod's environment, on the image the README
// builds, writing only to its volumes.
func TestKubernetesManifests(t *testing.T) {
	for _, p := range manifestPods(t, "kubernetes") {
		checkPod(t, p)
	}
}

// The values for the official Helm chart, held to the same.
func TestHelmValues(t *testing.T) {
	checkPod(t, chartPod(t, "helm/values.yaml"))
}

// The README's Deploy on Kubernetes section points at both.
func TestReadmeDeploySection(t *testing.T) {
	_, sec, ok := strings.Cut(readme(t), "\n## Deploy on Kubernetes\n")
	if !ok {
		t.Fatal("README has no Deploy on Kubernetes section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, f := range []string{"deploy/kubernetes/fluent-bit-mongodb.yaml", "deploy/helm/values.yaml"} {
		if _, err := os.Stat(filepath.Join("..", f)); err != nil {
			t.Error(err)
		}
		if !strings.Contains(sec, f) {
			t.Errorf("README's Deploy on Kubernetes section does not point at %s", f)
		}
	}
}

// make dist names the package to install when a cross compiler is missing,
// before it builds anything.
func TestDistSaysWhatToInstall(t *testing.T) {
	cmd := makeCommand("dist-arm64", "CC_arm64=no-such-gcc-for-the-test", "VERSION=v9.9.9-test")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make dist-arm64 without its compiler succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "no-such-gcc-for-the-test, is not installed") || !strings.Contains(string(out), "apt-get install gcc-aarch64-linux-gnu") {
		t.Errorf("make dist-arm64 without its compiler says:\n%s", out)
	}
	if _, err := os.Stat("../dist/out_mongodb-v9.9.9-test-linux-arm64.so"); err == nil {
		t.Error("make dist-arm64 without its compiler built the plugin")
	}
}
