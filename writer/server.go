package writer

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Server is what a buildInfo reply says of the server that matters to
// writing.
type Server struct {
	Name string // e.g. "MongoDB 7.0.14", "FerretDB v1 (7.0.42)"
	// MaxWriteBatch, above 0, is the most update statements one command
	// may hold on this server, and Why says why.
	MaxWriteBatch int
	Why           string
}

// ferretV1Batch is the update batch FerretDB v1 takes: a command of more
// matched statements than its connection pool (about 100 on SQLite, 50 on
// PostgreSQL) deadlocks it.
const ferretV1Batch = 20

// ServerOf reads a buildInfo reply.
func ServerOf(info bson.Raw) Server {
	version, _ := info.Lookup("version").StringValueOK()
	if _, err := info.LookupErr("ferretdbVersion"); err == nil {
		// FerretDB v1 answers ferretdbVersion; v2 a ferretdb document.
		return Server{Name: fmt.Sprintf("FerretDB v1 (claiming MongoDB %s)", version), MaxWriteBatch: ferretV1Batch,
			Why: fmt.Sprintf("it deadlocks on update commands of more than about %d matched statements", ferretV1Batch)}
	}
	if v, ok := info.Lookup("ferretdb", "version").StringValueOK(); ok {
		return Server{Name: fmt.Sprintf("FerretDB %s (claiming MongoDB %s)", v, version)}
	}
	return Server{Name: "MongoDB " + version}
}

// Informer is a Store that can read the server's buildInfo.
type Informer interface {
	BuildInfo(ctx context.Context) (bson.Raw, error)
}

// BuildInfo implements Informer.
func (s MongoStore) BuildInfo(ctx context.Context) (bson.Raw, error) {
	return s.DB.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
}
