package parser

import (
	"errors"
	"strings"
	"time"
)

// apacheErrorParser reads Apache error log lines, in the 2.4 form
//
//	[Wed Oct 11 14:32:52.123456 2000] [core:error] [pid 1234:tid 5678] [client 1.2.3.4:5678] AH00123: message
//
// and the older [Wed Oct 11 14:32:52 2000] [error] [client 1.2.3.4] message.
// The pid and client blocks are optional. Field names follow Fluent Bit's
// stock apache_error parser (time, level, pid, client, message), except that
// "core:error" is split into module and level and "1234:tid 5678" into pid
// and tid.
type apacheErrorParser struct{}

var (
	errApacheErrorTime  = errors.New("apache error log: want [time] first")
	errApacheErrorLevel = errors.New("apache error log: want [level] or [module:level] after the time")
	errApacheErrorBlock = errors.New("apache error log: unterminated [ block")
	errApacheErrorSpace = errors.New("apache error log: want a space before the message")
)

// apacheErrorLine holds the fields of one error line, each a substring of it.
type apacheErrorLine struct {
	time          time.Time
	module, level string
	pid, tid      string
	client        string
	message       string
}

// Parse implements LineParser.
func (apacheErrorParser) Parse(line string, out FieldSink) error {
	var r apacheErrorLine
	if err := scanApacheError(trimLineEnd(line), &r); err != nil {
		return err
	}
	out.Time("time", r.time)
	emitIfSet(out, "module", r.module)
	out.String("level", r.level)
	if r.pid != "" {
		EmitTyped(out, "pid", r.pid, KindInt)
	}
	if r.tid != "" {
		EmitTyped(out, "tid", r.tid, KindInt)
	}
	emitIfSet(out, "client", r.client)
	out.String("message", r.message)
	return nil
}

// TimeKey implements LineParser: every error line has its time.
func (apacheErrorParser) TimeKey() string { return "time" }

// Types implements LineParser: the stock apache_error parser leaves the time
// as a string (it has no time format) and the pid too. A 2.4 pid block stays
// "1234:tid 5678" there, which is not an integer and is kept as it is.
func (apacheErrorParser) Types() map[string]Kind {
	return map[string]Kind{"time": KindTime, "pid": KindInt}
}

func scanApacheError(s string, r *apacheErrorLine) error {
	block, s, ok := cutBlock(s)
	if !ok {
		return errApacheErrorTime
	}
	if r.time, ok = parseLineTime(block); !ok {
		return errApacheErrorTime
	}
	if !strings.HasPrefix(s, " [") {
		return errApacheErrorLevel
	}
	if block, s, ok = cutBlock(s[1:]); !ok {
		return errApacheErrorLevel
	}
	if module, level, found := strings.Cut(block, ":"); found {
		r.module, r.level = module, level
	} else {
		r.level = block
	}
	if strings.HasPrefix(s, " [pid ") {
		if block, s, ok = cutBlock(s[1:]); !ok {
			return errApacheErrorBlock
		}
		r.pid, r.tid, _ = strings.Cut(block[len("pid "):], ":tid ")
	}
	if strings.HasPrefix(s, " [client ") {
		if block, s, ok = cutBlock(s[1:]); !ok {
			return errApacheErrorBlock
		}
		r.client = block[len("client "):]
	}
	if s != "" {
		if s[0] != ' ' {
			return errApacheErrorSpace
		}
		r.message = s[1:]
	}
	return nil
}
