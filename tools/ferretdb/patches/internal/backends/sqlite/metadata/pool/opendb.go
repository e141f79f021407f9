// Copyright 2021 FerretDB Inc.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package pool

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"time"

	_ "modernc.org/sqlite" // register database/sql driver

	"github.com/FerretDB/FerretDB/internal/util/fsql"
	"github.com/FerretDB/FerretDB/internal/util/lazyerrors"
	"github.com/FerretDB/FerretDB/internal/util/logging"
	"github.com/FerretDB/FerretDB/internal/util/state"
)

// openDB opens existing database or creates a new one.
//
// All valid FerretDB database names are valid SQLite database names / file names,
// so no validation is needed.
// One exception is very long full path names for the filesystem,
// but we don't check it.
func openDB(name, uri string, memory bool, l *slog.Logger, sp *state.Provider) (*fsql.DB, error) {
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, lazyerrors.Error(err)
	}

	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	db.SetMaxIdleConns(100)
	db.SetMaxOpenConns(100)

	// Each connection to in-memory database uses its own database.
	// See https://www.sqlite.org/inmemorydb.html.
	// We don't want that.
	if memory {
		db.SetMaxIdleConns(1)
		db.SetMaxOpenConns(1)
	}

	if err = db.Ping(); err != nil {
		_ = db.Close()
		return nil, lazyerrors.Error(err)
	}

	// do it only once because version can't change
	if sp.Get().BackendVersion == "" {
		err := sp.Update(func(s *state.State) {
			s.BackendName = "SQLite"

			row := db.QueryRowContext(context.Background(), "SELECT sqlite_version()")
			if err := row.Scan(&s.BackendVersion); err != nil {
				l.Error("sqlite.metadata.pool.openDB: failed to query SQLite version", logging.Error(err))
			}
		})
		if err != nil {
			l.Error("sqlite.metadata.pool.openDB: failed to update state", logging.Error(err))
		}
	}

	// Gadget Code patch: the WAL is checkpointed beside the writers, not by them. SQLite's
	// automatic checkpoint runs inside the commit that crosses 1,000 WAL pages: that write (and,
	// through the write mutex of fsql.DB, every write queued behind it) waits while pages are
	// copied back, a sixth of an update's time and a tenth of an insert's. A passive checkpoint
	// on a connection of its own (not through fsql's mutex) takes no write lock and runs on the
	// other core. The automatic one stays, further out (the connection URI sets
	// wal_autocheckpoint), for when this one falls behind.
	if !memory {
		go checkpointWAL(db, l)
	}

	return fsql.WrapDB(db, name, l), nil
}

// checkpointInterval is how often checkpointWAL copies the WAL back into the database.
const checkpointInterval = 250 * time.Millisecond

// checkpointWAL runs passive checkpoints of db until db is closed.
// (Gadget Code patch; see openDB.)
func checkpointWAL(db *sql.DB, l *slog.Logger) {
	ticker := time.NewTicker(checkpointInterval)
	defer ticker.Stop()

	for range ticker.C {
		_, err := db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		if err == nil {
			continue
		}

		// database/sql does not export its "database is closed" error.
		if strings.Contains(err.Error(), "database is closed") {
			return
		}

		l.Warn("sqlite.metadata.pool.checkpointWAL: checkpoint failed", logging.Error(err))
	}
}
