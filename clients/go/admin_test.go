// SPDX-License-Identifier: Apache-2.0

package tickwheel

// The operator's routes through the client (backup, export, import, pause
// and resume of delivery and of writes), against a real tickwheel serve.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestABackupGoesIntoANewDirectory(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "b")
	b, err := c.Backup(ctx, dir)
	if err != nil || b.Dir != dir || b.Files == 0 {
		t.Fatalf("backup %+v %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tickwheel-backup.json")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Backup(ctx, dir)
	mustCode(t, err, 400, "backup_exists")
}

func TestAnExportIsReadPageAfterPageAndImportedAgain(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("go-exp-%d", i)
		ids[id] = true
		if _, err := c.Create(ctx, CreateTimer{ID: id, DelayMs: Ms(600_000), Target: URL("http://127.0.0.1:9/never")}); err != nil {
			t.Fatal(err)
		}
	}
	o := ExportOptions{States: []TimerState{StatePending}, Limit: 2}
	first, cursor, err := c.ExportPage(ctx, o, "")
	if err != nil || len(first) == 0 || first[0].Kind != "export" || cursor == "" {
		t.Fatalf("first page %v %q %v", first, cursor, err)
	}
	var header ExportHeader
	var mine []interface{}
	timers := int64(0)
	err = c.Export(ctx, o, func(l ExportLine) bool {
		switch l.Kind {
		case "export":
			if err := json.Unmarshal(l.Raw, &header); err != nil {
				t.Fatal(err)
			}
		case "timer":
			timers++
			var tm ExportTimer
			if err := json.Unmarshal(l.Raw, &tm); err != nil {
				t.Fatal(err)
			}
			if ids[tm.ID] {
				if tm.CreateDigest == "" {
					t.Fatalf("no create digest: %s", l.Raw)
				}
				mine = append(mine, l)
			}
		}
		return true
	})
	if err != nil || header.Kind != "export" || header.Timers != timers || len(mine) != 3 {
		t.Fatalf("export: header %+v, %d timers, %d of mine, %v", header, timers, len(mine), err)
	}
	if res, err := c.Import(ctx, mine); err != nil || res.Existing != 3 || res.Created != 0 {
		t.Fatalf("import of the export's own lines %+v %v", res, err)
	}
	fresh := ImportTimer{ID: "go-imp-1", State: StatePending, FireAtMs: time.Now().UnixMilli() + 600_000,
		Target: URL("http://127.0.0.1:9/never"), Payload: json.RawMessage(`{"imported":true}`)}
	res, err := c.Import(ctx, []interface{}{fresh})
	if err != nil || res.Lines != 1 || res.Created != 1 || res.Existing != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("import %+v %v", res, err)
	}
	if got, err := c.Get(ctx, "go-imp-1"); err != nil || string(got.Payload) != `{"imported":true}` {
		t.Fatalf("imported %+v %v", got, err)
	}
	if res, err := c.Import(ctx, []interface{}{fresh}); err != nil || res.Existing != 1 {
		t.Fatalf("import again %+v %v", res, err)
	}
}

func TestWritesPausedAreRefusedThenTakenAgain(t *testing.T) {
	c, e := adminClient(t)
	ctx := context.Background()
	if m, err := c.PauseWrites(ctx); err != nil || m.Writes != "paused" {
		t.Fatalf("pause %+v %v", m, err)
	}
	zero := 0
	once, err := New(e.server, Options{Token: e.admin, Retries: &zero})
	if err != nil {
		t.Fatal(err)
	}
	_, err = once.Create(ctx, CreateTimer{DelayMs: Ms(1), Target: URL("http://127.0.0.1:9/never")})
	if m, rerr := c.ResumeWrites(ctx); rerr != nil || m.Writes != "accepted" {
		t.Fatalf("resume %+v %v", m, rerr)
	}
	mustCode(t, err, 503, "writes_paused")
	if _, err := c.Create(ctx, CreateTimer{ID: "go-after-writes", DelayMs: Ms(600_000),
		Target: URL("http://127.0.0.1:9/never")}); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryPausedHoldsDueTimersUntilResumed(t *testing.T) {
	c, _ := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	if m, err := c.PauseDelivery(ctx); err != nil || m.Delivery != "paused" {
		t.Fatalf("pause %+v %v", m, err)
	}
	_, cerr := c.Create(ctx, CreateTimer{ID: "go-held", DelayMs: Ms(0), Target: URL(r.url("/go-held"))})
	h, herr := c.Health(ctx)
	got, gerr := c.Get(ctx, "go-held")
	r.mu.Lock()
	early := len(r.got["/go-held"])
	r.mu.Unlock()
	if m, err := c.ResumeDelivery(ctx); err != nil || m.Delivery != "running" {
		t.Fatalf("resume %+v %v", m, err)
	}
	if cerr != nil || herr != nil || gerr != nil {
		t.Fatal(cerr, herr, gerr)
	}
	if h.Delivery != "paused" || got.State != StatePending || early != 0 {
		t.Fatalf("while paused: health %+v, state %s, %d deliveries", h, got.State, early)
	}
	r.waitFor(t, "/go-held")
}
