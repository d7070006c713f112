package e2e

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// make serve's server listens where it is told and keeps its data in its
// folder across a stop (Ctrl-C) and a start.
func TestServeKeepsData(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "serve")
	build := exec.Command("go", "build", "-o", bin, "./cmd/serve")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/serve: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data := t.TempDir()
	start := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command(bin, "-addr", addr, "-data", data)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.Contains(line, "mongodb://"+addr) {
			t.Fatalf("serve said %q, %v", line, err)
		}
		go func() { _, _ = bufio.NewReader(out).ReadString(0) }()
		return cmd
	}
	stop := func(cmd *exec.Cmd) {
		t.Helper()
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after Ctrl-C: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("serve did not stop on Ctrl-C")
		}
	}
	coll := func() (*mongo.Collection, func()) {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).SetTimeout(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return c.Database("d").Collection("c"), func() { _ = c.Disconnect(context.Background()) }
	}
	srv := start()
	c, closeFn := coll()
	if _, err := c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	closeFn()
	stop(srv)
	srv = start()
	defer stop(srv)
	c, closeFn = coll()
	defer closeFn()
	if n, err := c.CountDocuments(context.Background(), bson.D{{Key: "_id", Value: "kept"}}); err != nil || n != 1 {
		t.Errorf("after a restart: %d documents, %v", n, err)
	}
}
