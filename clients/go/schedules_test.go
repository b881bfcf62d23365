// SPDX-License-Identifier: Apache-2.0

package tickwheel

// Schedules and flows through the client, against a real tickwheel serve.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const hourMs = int64(3_600_000)

func TestAScheduleFromCreateToDelete(t *testing.T) {
	c, e := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	body := CreateSchedule{ID: "go-sched", EveryMs: hourMs, Target: URL(r.url("/go-sched")),
		Payload: json.RawMessage(`{"s":1}`)}
	s, err := c.CreateSchedule(ctx, body)
	if err != nil || s.ID != "go-sched" || s.State != ScheduleActive || s.EveryMs != hourMs {
		t.Fatalf("created %+v %v", s, err)
	}
	if again, err := c.CreateSchedule(ctx, body); err != nil || again.CreatedMs != s.CreatedMs {
		t.Fatalf("created again %+v %v", again, err)
	}
	other := body
	other.EveryMs = 2 * hourMs
	_, err = c.CreateSchedule(ctx, other)
	mustCode(t, err, 409, "id_conflict")
	got, err := c.GetSchedule(ctx, "go-sched", 3)
	if err != nil || len(got.Next) != 3 || got.Next[1].AtMs-got.Next[0].AtMs != hourMs {
		t.Fatalf("get %+v %v", got, err)
	}
	jitter := int64(1000)
	if u, err := c.UpdateSchedule(ctx, "go-sched", PatchSchedule{JitterMs: &jitter}); err != nil || u.JitterMs != 1000 {
		t.Fatalf("update %+v %v", u, err)
	}
	if p, err := c.PauseSchedule(ctx, "go-sched"); err != nil || p.State != SchedulePaused {
		t.Fatalf("pause %+v %v", p, err)
	}
	if p, err := c.ResumeSchedule(ctx, "go-sched"); err != nil || p.State != ScheduleActive {
		t.Fatalf("resume %+v %v", p, err)
	}

	occurrence, err := c.TriggerSchedule(ctx, "go-sched")
	if err != nil || !strings.HasPrefix(occurrence.ID, "go-sched@") {
		t.Fatalf("trigger %+v %v", occurrence, err)
	}
	delivered := r.waitFor(t, "/go-sched")
	d, err := VerifyWebhook(e.secrets, delivered.header, delivered.body)
	if err != nil || d.Schedule != "go-sched" || string(d.Payload) != `{"s":1}` {
		t.Fatalf("delivery %+v %v", d, err)
	}

	now := time.Now().UnixMilli()
	out, err := c.BackfillSchedule(ctx, "go-sched", Backfill{FromMs: now - 3*hourMs, ToMs: now})
	if err != nil || out.Created != 3 || out.Existing != 0 || out.More {
		t.Fatalf("backfill %+v %v", out, err)
	}
	out, err = c.BackfillSchedule(ctx, "go-sched", Backfill{FromMs: now - 3*hourMs, ToMs: now})
	if err != nil || out.Created != 0 || out.Existing != 3 {
		t.Fatalf("backfill again %+v %v", out, err)
	}
	waitUntil(t, "three backfilled occurrences counted", func() bool {
		s, err := c.GetSchedule(ctx, "go-sched", -1)
		return err == nil && s.Counts.Backfilled == 3
	})

	if gone, err := c.DeleteSchedule(ctx, "go-sched"); err != nil || gone.ID != "go-sched" {
		t.Fatalf("delete %+v %v", gone, err)
	}
	_, err = c.GetSchedule(ctx, "go-sched", -1)
	mustCode(t, err, 404, "not_found")
}

func TestSchedulesAreListedPageAfterPage(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	for _, id := range []string{"go-cron-a", "go-cron-b", "go-cron-c"} {
		if _, err := c.CreateSchedule(ctx, CreateSchedule{ID: id, Cron: "0 9 * * 1-5", TimeZone: "Europe/Berlin",
			Target: URL("http://127.0.0.1:9/never")}); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	err := c.ListSchedules(ctx, ScheduleListOptions{Prefix: "go-cron-", Limit: 2}, func(s Schedule) bool {
		listed = append(listed, s.ID)
		return true
	})
	if err != nil || strings.Join(listed, ",") != "go-cron-a,go-cron-b,go-cron-c" {
		t.Fatalf("listed %v %v", listed, err)
	}
	page, err := c.ListSchedulesPage(ctx, ScheduleListOptions{Prefix: "go-cron-", Limit: 2})
	if err != nil || len(page.Schedules) != 2 || page.NextAfter == "" {
		t.Fatalf("page %+v %v", page, err)
	}
	if _, err := c.PauseSchedule(ctx, "go-cron-b"); err != nil {
		t.Fatal(err)
	}
	listed = nil
	err = c.ListSchedules(ctx, ScheduleListOptions{Prefix: "go-cron-", State: SchedulePaused}, func(s Schedule) bool {
		listed = append(listed, s.ID)
		return true
	})
	if err != nil || strings.Join(listed, ",") != "go-cron-b" {
		t.Fatalf("paused %v %v", listed, err)
	}
}

func TestAFlowIsSetPausedResumedAndReset(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	rate, burst := 5.0, 2
	f, err := c.SetFlow(ctx, "go-flow-set", FlowSettings{RatePerS: &rate, Burst: &burst})
	if err != nil || f.Key != "go-flow-set" || !f.Configured || f.RatePerS == nil || *f.RatePerS != 5 ||
		f.Burst == nil || *f.Burst != 2 {
		t.Fatalf("set %+v %v", f, err)
	}
	if g, err := c.GetFlow(ctx, "go-flow-set"); err != nil || g.Settings == nil || *g.Settings.RatePerS != 5 {
		t.Fatalf("get %+v %v", g, err)
	}
	found := false
	if err := c.ListFlows(ctx, 1, func(f Flow) bool { found = found || f.Key == "go-flow-set"; return true }); err != nil || !found {
		t.Fatalf("listed: found %v, %v", found, err)
	}
	if p, err := c.PauseFlow(ctx, "go-flow-set"); err != nil || !p.Paused {
		t.Fatalf("pause %+v %v", p, err)
	}
	if p, err := c.ResumeFlow(ctx, "go-flow-set"); err != nil || p.Paused {
		t.Fatalf("resume %+v %v", p, err)
	}
	if p, err := c.ResetFlow(ctx, "go-flow-set"); err != nil || p.Configured {
		t.Fatalf("reset %+v %v", p, err)
	}
	if g, err := c.GetFlow(ctx, "go-flow-set"); err != nil || g.Configured {
		t.Fatalf("get after reset %+v %v", g, err)
	}
}
