// SPDX-License-Identifier: Apache-2.0

package tickwheel

// Schedules (docs/schedules.md): their shapes and calls.

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// ScheduleState is active, paused or ended.
type ScheduleState string

const (
	ScheduleActive ScheduleState = "active"
	SchedulePaused ScheduleState = "paused"
	ScheduleEnded  ScheduleState = "ended"
)

// CreateSchedule is a schedule to create: exactly one of EveryMs and
// Cron, and a target. Zero fields take the server's defaults.
type CreateSchedule struct {
	ID              string          `json:"id"`
	EveryMs         int64           `json:"every_ms,omitempty"`
	AnchorMs        *int64          `json:"anchor_ms,omitempty"`
	Cron            string          `json:"cron,omitempty"`
	TimeZone        string          `json:"time_zone,omitempty"`
	DstGap          string          `json:"dst_gap,omitempty"`     // shift, skip
	DstOverlap      string          `json:"dst_overlap,omitempty"` // first, both
	StartMs         *int64          `json:"start_ms,omitempty"`
	EndMs           *int64          `json:"end_ms,omitempty"`
	MaxOccurrences  int64           `json:"max_occurrences,omitempty"`
	JitterMs        int64           `json:"jitter_ms,omitempty"`
	Overlap         string          `json:"overlap,omitempty"`  // allow, skip, buffer_one
	CatchUp         string          `json:"catch_up,omitempty"` // none, latest, all
	CatchUpWindowMs int64           `json:"catch_up_window_ms,omitempty"`
	CatchUpMax      int             `json:"catch_up_max,omitempty"`
	Target          Target          `json:"target"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Retry           *RetryPolicy    `json:"retry,omitempty"`
	Flow            string          `json:"flow,omitempty"`
}

// PatchSchedule changes what is set; the rest stays. StartMs, EndMs and
// MaxOccurrences are JSON: a number, or null to remove the bound.
type PatchSchedule struct {
	EveryMs         int64           `json:"every_ms,omitempty"`
	AnchorMs        *int64          `json:"anchor_ms,omitempty"`
	Cron            string          `json:"cron,omitempty"`
	TimeZone        string          `json:"time_zone,omitempty"`
	DstGap          string          `json:"dst_gap,omitempty"`
	DstOverlap      string          `json:"dst_overlap,omitempty"`
	StartMs         json.RawMessage `json:"start_ms,omitempty"`
	EndMs           json.RawMessage `json:"end_ms,omitempty"`
	MaxOccurrences  json.RawMessage `json:"max_occurrences,omitempty"`
	JitterMs        *int64          `json:"jitter_ms,omitempty"`
	Overlap         string          `json:"overlap,omitempty"`
	CatchUp         string          `json:"catch_up,omitempty"`
	CatchUpWindowMs *int64          `json:"catch_up_window_ms,omitempty"`
	CatchUpMax      *int            `json:"catch_up_max,omitempty"`
	Target          *Target         `json:"target,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Retry           *RetryPolicy    `json:"retry,omitempty"`
	Flow            string          `json:"flow,omitempty"`
}

// SkippedCounts are a schedule's occurrences skipped, by cause.
type SkippedCounts struct {
	Overlap int64 `json:"overlap"`
	CatchUp int64 `json:"catch_up"`
	Dst     int64 `json:"dst"`
}

// ScheduleCounts are a schedule's occurrences so far.
type ScheduleCounts struct {
	Planned    int64         `json:"planned"`
	Fired      int64         `json:"fired"`
	Skipped    SkippedCounts `json:"skipped"`
	Triggered  int64         `json:"triggered"`
	Backfilled int64         `json:"backfilled"`
}

// UpcomingTime is one of a schedule's next times.
type UpcomingTime struct {
	AtMs         int64  `json:"at_ms"`
	Occurrence   string `json:"occurrence"`
	UTC          string `json:"utc"`
	Local        string `json:"local,omitempty"`
	UTCOffsetS   *int   `json:"utc_offset_s,omitempty"`
	Abbreviation string `json:"abbreviation,omitempty"`
}

// OccurrenceSummary is one of a schedule's last occurrences.
type OccurrenceSummary struct {
	ID        string     `json:"id"`
	NominalMs int64      `json:"nominal_ms,omitempty"`
	State     TimerState `json:"state"`
	FireAtMs  int64      `json:"fire_at_ms"`
	Attempts  int        `json:"attempts"`
	UpdatedMs int64      `json:"updated_ms"`
	Status    int        `json:"status,omitempty"`
	LastError string     `json:"last_error,omitempty"`
}

// Schedule is a schedule as the server keeps it.
type Schedule struct {
	ID              string              `json:"id"`
	State           ScheduleState       `json:"state"`
	EndedReason     string              `json:"ended_reason,omitempty"`
	PausedMs        int64               `json:"paused_ms,omitempty"`
	EveryMs         int64               `json:"every_ms,omitempty"`
	AnchorMs        int64               `json:"anchor_ms,omitempty"`
	Cron            string              `json:"cron,omitempty"`
	TimeZone        string              `json:"time_zone,omitempty"`
	DstGap          string              `json:"dst_gap,omitempty"`
	DstOverlap      string              `json:"dst_overlap,omitempty"`
	StartMs         *int64              `json:"start_ms,omitempty"`
	EndMs           *int64              `json:"end_ms,omitempty"`
	MaxOccurrences  int64               `json:"max_occurrences,omitempty"`
	JitterMs        int64               `json:"jitter_ms"`
	Overlap         string              `json:"overlap"`
	CatchUp         string              `json:"catch_up"`
	CatchUpWindowMs int64               `json:"catch_up_window_ms"`
	CatchUpMax      int                 `json:"catch_up_max"`
	Retry           TimerRetry          `json:"retry"`
	Target          Target              `json:"target"`
	Flow            string              `json:"flow"`
	Payload         json.RawMessage     `json:"payload"`
	CreatedMs       int64               `json:"created_ms"`
	UpdatedMs       int64               `json:"updated_ms"`
	Traceparent     string              `json:"traceparent,omitempty"`
	Tracestate      string              `json:"tracestate,omitempty"`
	NextMs          *int64              `json:"next_ms,omitempty"`
	CatchUpMs       []int64             `json:"catch_up_ms,omitempty"`
	BufferedMs      *int64              `json:"buffered_ms,omitempty"`
	LastFiredMs     *int64              `json:"last_fired_ms,omitempty"`
	Occurrences     int64               `json:"occurrences"`
	Counts          ScheduleCounts      `json:"counts"`
	Next            []UpcomingTime      `json:"next,omitempty"`
	LastOccurrences []OccurrenceSummary `json:"last_occurrences,omitempty"`
}

// SchedulePage is a page of schedules; NextAfter is set while there may
// be more.
type SchedulePage struct {
	Schedules []Schedule `json:"schedules"`
	NextAfter string     `json:"next_after,omitempty"`
}

// Backfill is a past range [FromMs, ToMs) to create occurrences in.
type Backfill struct {
	FromMs int64 `json:"from_ms"`
	ToMs   int64 `json:"to_ms"`
}

// BackfillOutcome says what a backfill created; while More, call again
// from NextFromMs.
type BackfillOutcome struct {
	Created    int64  `json:"created"`
	Existing   int64  `json:"existing"`
	More       bool   `json:"more"`
	NextFromMs *int64 `json:"next_from_ms,omitempty"`
}

// ScheduleListOptions filter a listing of schedules.
type ScheduleListOptions struct {
	State       ScheduleState
	Prefix      string
	Limit       int    // 1..1000; 0: the server's 100
	After       string // a page's NextAfter
	ShowHeaders bool
}

func schedulePath(id string) string { return "/v1/schedules/" + url.PathEscape(id) }

// CreateSchedule creates a schedule; the same body again returns it as it
// is, another body under its id is 409 id_conflict.
func (c *Client) CreateSchedule(ctx context.Context, s CreateSchedule) (*Schedule, error) {
	var out Schedule
	return &out, c.call(ctx, "POST", "/v1/schedules", s, &out, nil)
}

// GetSchedule returns a schedule with its next upcoming times (next < 0:
// the server's 5).
func (c *Client) GetSchedule(ctx context.Context, id string, next int) (*Schedule, error) {
	path := schedulePath(id)
	if next >= 0 {
		path += "?next=" + strconv.Itoa(next)
	}
	var out Schedule
	return &out, c.call(ctx, "GET", path, nil, &out, nil)
}

// ListSchedulesPage returns one page of schedules in id order.
func (c *Client) ListSchedulesPage(ctx context.Context, o ScheduleListOptions) (*SchedulePage, error) {
	q := url.Values{}
	if o.State != "" {
		q.Set("state", string(o.State))
	}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.ShowHeaders {
		q.Set("show_headers", "true")
	}
	path := "/v1/schedules"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out SchedulePage
	return &out, c.call(ctx, "GET", path, nil, &out, nil)
}

// ListSchedules calls fn for every schedule matching o, page after page,
// until fn returns false or there are no more.
func (c *Client) ListSchedules(ctx context.Context, o ScheduleListOptions, fn func(Schedule) bool) error {
	return eachPage(o.After, func(after string) ([]Schedule, string, error) {
		o.After = after
		page, err := c.ListSchedulesPage(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return page.Schedules, page.NextAfter, nil
	}, fn)
}

// UpdateSchedule changes what p sets.
func (c *Client) UpdateSchedule(ctx context.Context, id string, p PatchSchedule) (*Schedule, error) {
	var out Schedule
	return &out, c.call(ctx, "PATCH", schedulePath(id), p, &out, nil)
}

// DeleteSchedule deletes a schedule (its planned occurrence is cancelled)
// and returns it as it was.
func (c *Client) DeleteSchedule(ctx context.Context, id string) (*Schedule, error) {
	var out Schedule
	return &out, c.call(ctx, "DELETE", schedulePath(id), nil, &out, nil)
}

// PauseSchedule pauses a schedule: nothing of its recurrence fires.
func (c *Client) PauseSchedule(ctx context.Context, id string) (*Schedule, error) {
	var out Schedule
	return &out, c.call(ctx, "POST", schedulePath(id)+":pause", nil, &out, nil)
}

// ResumeSchedule resumes a paused schedule (its catch-up policy applies).
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*Schedule, error) {
	var out Schedule
	return &out, c.call(ctx, "POST", schedulePath(id)+":resume", nil, &out, nil)
}

// TriggerSchedule creates an occurrence now: the timer <id>@<now>.
func (c *Client) TriggerSchedule(ctx context.Context, id string) (*Timer, error) {
	var out Timer
	return &out, c.call(ctx, "POST", schedulePath(id)+":trigger", nil, &out, nil)
}

// BackfillSchedule creates the occurrences of [FromMs, ToMs) that were not
// there; while the outcome's More, call again from its NextFromMs.
func (c *Client) BackfillSchedule(ctx context.Context, id string, b Backfill) (*BackfillOutcome, error) {
	var out BackfillOutcome
	return &out, c.call(ctx, "POST", schedulePath(id)+":backfill", b, &out, nil)
}
