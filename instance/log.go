package instance

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// Logger writes lines in Fluent Bit's style, prefixed with the plugin and
// instance name: `[2024/06/01 10:00:00] [ warn] [out_mongodb:logs-main] ...`.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	level  int
	now    func() time.Time
}

var levels = map[conf.LogLevel]int{conf.LogError: 0, conf.LogWarn: 1, conf.LogInfo: 2, conf.LogDebug: 3}

// NewLogger returns a logger for instance name at level.
func NewLogger(w io.Writer, name string, level conf.LogLevel) *Logger {
	l, ok := levels[level]
	if !ok {
		l = levels[conf.LogInfo]
	}
	return &Logger{w: w, prefix: "[out_mongodb:" + name + "] ", level: l, now: time.Now}
}

func (l *Logger) logf(level int, tag, format string, args []any) {
	if level > l.level {
		return
	}
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(msg, "\n", "\n    ")
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "[%s] [%s] %s%s\n", l.now().Format("2006/01/02 15:04:05"), tag, l.prefix, msg)
}

func (l *Logger) Errorf(format string, args ...any) { l.logf(0, "error", format, args) }
func (l *Logger) Warnf(format string, args ...any)  { l.logf(1, " warn", format, args) }
func (l *Logger) Infof(format string, args ...any)  { l.logf(2, " info", format, args) }
func (l *Logger) Debugf(format string, args ...any) { l.logf(3, "debug", format, args) }
