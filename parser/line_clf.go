package parser

import (
	"errors"
	"strings"
	"time"
)

// clfParser reads web server access lines in the Common Log Format and its
// combined variant:
//
//	host ident user [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "referer" "agent"
//
// It is a hand-written scanner: fields are substrings of the line, so a parse
// allocates nothing. Field names follow Fluent Bit's stock apache2 and nginx
// parsers, so raw lines and records those parsers split look the same.
type clfParser struct {
	firstKey string // name of the client address field
	identKey string // name of the ident field; "" drops it
	// combined accepts an optional quoted referer and agent after the size.
	combined bool
	// ignoreTail ignores whatever follows the agent, as the stock nginx
	// parser does (nginx's "main" format appends "$http_x_forwarded_for").
	ignoreTail bool
}

var (
	apacheCommon   = &clfParser{firstKey: "host"}
	apacheCombined = &clfParser{firstKey: "host", combined: true}
	nginxAccess    = &clfParser{firstKey: "remote", identKey: "host", combined: true, ignoreTail: true}
)

var (
	errCLFFields   = errors.New("access log: want host, ident and user before [time]")
	errCLFTime     = errors.New("access log: want [dd/Mon/yyyy:hh:mm:ss +zzzz] after the user")
	errCLFRequest  = errors.New(`access log: want a quoted request after [time]`)
	errCLFStatus   = errors.New("access log: want status and size after the request")
	errCLFReferer  = errors.New(`access log: want "referer" "agent" after the size`)
	errCLFTrailing = errors.New("access log: unexpected text after the last field")
)

// clfLine holds the fields of one access line, each a substring of it.
type clfLine struct {
	first, ident, user     string
	time                   time.Time
	method, path, protocol string // "" when the request has no such part
	code, size             string
	referer, agent         string
	hasAgent               bool
}

// Parse implements LineParser.
func (p *clfParser) Parse(line string, out FieldSink) error {
	var r clfLine
	if err := p.scan(trimLineEnd(line), &r); err != nil {
		return err
	}
	p.emit(&r, out)
	return nil
}

// Types implements LineParser: the stock parsers leave code and size as strings.
func (p *clfParser) Types() map[string]Kind {
	return map[string]Kind{"code": KindInt, "size": KindInt}
}

// TimeKey implements LineParser: every access line has its time.
func (p *clfParser) TimeKey() string { return "time" }

func (p *clfParser) scan(s string, r *clfLine) error {
	var ok1, ok2, ok3 bool
	r.first, s, ok1 = strings.Cut(s, " ")
	r.ident, s, ok2 = strings.Cut(s, " ")
	r.user, s, ok3 = strings.Cut(s, " ")
	if !(ok1 && ok2 && ok3) {
		return errCLFFields
	}

	stamp, s, ok := cutBlock(s)
	if !ok {
		return errCLFTime
	}
	if r.time, ok = parseCLFTime(stamp); !ok {
		return errCLFTime
	}

	if !strings.HasPrefix(s, ` "`) {
		return errCLFRequest
	}
	request, s, ok := cutQuoted(s[2:])
	if !ok {
		return errCLFRequest
	}
	splitRequest(request, r)

	// Status and size are single words; the size may end the line.
	if s == "" || s[0] != ' ' {
		return errCLFStatus
	}
	if r.code, s, ok = strings.Cut(s[1:], " "); !ok {
		return errCLFStatus
	}
	if r.size, s, ok = strings.Cut(s, " "); !ok {
		return nil // common format: the line ends after the size
	}
	if !p.combined {
		return errCLFTrailing
	}
	return p.scanRefererAgent(s, r)
}

// scanRefererAgent reads `"referer" "agent"` and checks what follows.
func (p *clfParser) scanRefererAgent(s string, r *clfLine) error {
	var ok bool
	if s == "" || s[0] != '"' {
		return errCLFReferer
	}
	if r.referer, s, ok = cutQuoted(s[1:]); !ok || !strings.HasPrefix(s, ` "`) {
		return errCLFReferer
	}
	if r.agent, s, ok = cutQuoted(s[2:]); !ok {
		return errCLFReferer
	}
	if s != "" && !p.ignoreTail {
		return errCLFTrailing
	}
	r.hasAgent = true
	return nil
}

// splitRequest splits the request line "METHOD PATH PROTOCOL" as Fluent Bit's
// stock parsers do: the method is the first word, the protocol the last one
// when there are three or more, and the path what lies between (spaces and
// all). "-" or a lone word gives only a method; an empty request nothing.
func splitRequest(request string, r *clfLine) {
	method, rest, _ := strings.Cut(strings.Trim(request, " "), " ")
	r.method = method
	rest = strings.TrimLeft(rest, " ")
	if rest == "" {
		return
	}
	if i := strings.LastIndexByte(rest, ' '); i >= 0 {
		r.path, r.protocol = strings.TrimRight(rest[:i], " "), rest[i+1:]
	} else {
		r.path = rest
	}
}

func (p *clfParser) emit(r *clfLine, out FieldSink) {
	out.String(p.firstKey, r.first)
	if p.identKey != "" {
		out.String(p.identKey, r.ident)
	}
	out.String("user", r.user)
	out.Time("time", r.time)
	emitIfSet(out, "method", r.method)
	emitIfSet(out, "path", r.path)
	emitIfSet(out, "protocol", r.protocol)
	EmitTyped(out, "code", r.code, KindInt)
	EmitTyped(out, "size", r.size, KindInt)
	if r.hasAgent {
		out.String("referer", r.referer)
		out.String("agent", r.agent)
	}
}

// emitIfSet emits a string field unless it is empty.
func emitIfSet(out FieldSink, key, val string) {
	if val != "" {
		out.String(key, val)
	}
}
