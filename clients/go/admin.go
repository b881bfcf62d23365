// SPDX-License-Identifier: Apache-2.0

package tickwheel

// The operator's routes (docs/data.md; an admin token): backup, export,
// import, pausing delivery and writes. Their shapes and calls.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// BackupRequest names a backup's new directory (absolute, on the
// server's machine, inside one that exists).
type BackupRequest struct {
	To string `json:"to"`
}

// Backup is a backup taken.
type Backup struct {
	Dir           string `json:"dir"`
	Bytes         int64  `json:"bytes"`
	Files         int64  `json:"files"`
	TookMs        int64  `json:"took_ms"`
	RecordFormat  int    `json:"record_format"`
	ServerVersion string `json:"server_version"`
	TakenMs       int64  `json:"taken_ms"`
}

// AdminMode says whether the server fires timers (Delivery: paused,
// running) and takes clients' writes (Writes: paused, accepted).
type AdminMode struct {
	Delivery string `json:"delivery"`
	Writes   string `json:"writes"`
	InFlight int64  `json:"in_flight"`
}

// ImportConflict is a line an import left as it was: its record exists
// here with another content.
type ImportConflict struct {
	Line     int    `json:"line"`
	ID       string `json:"id,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	Flow     string `json:"flow,omitempty"`
	Message  string `json:"message"`
}

// ImportResult says what an import created, found, and refused.
type ImportResult struct {
	Lines     int64            `json:"lines"`
	Timers    int64            `json:"timers"`
	Schedules int64            `json:"schedules"`
	Flows     int64            `json:"flows"`
	Created   int64            `json:"created"`
	Existing  int64            `json:"existing"`
	Conflicts []ImportConflict `json:"conflicts"`
}

// ExportHeader is an export's first line.
type ExportHeader struct {
	Kind          string       `json:"kind"` // export
	Format        int          `json:"format"`
	ServerVersion string       `json:"server_version,omitempty"`
	Store         string       `json:"store,omitempty"` // embedded, postgres
	TakenMs       int64        `json:"taken_ms,omitempty"`
	States        []TimerState `json:"states,omitempty"`
	Counts        *StateCounts `json:"counts,omitempty"`
	Timers        int64        `json:"timers"`
}

// ExportTimer is a timer line of an export: the timer and its create digest.
type ExportTimer struct {
	Kind string `json:"kind"` // timer
	Timer
	CreateDigest string `json:"create_digest"`
}

// ImportTimer is a timer to import: an export's timer line, or one with
// only its create body, ID and State (the rest defaults).
type ImportTimer struct {
	Kind          string            `json:"kind,omitempty"` // timer
	ID            string            `json:"id"`
	State         TimerState        `json:"state"`
	FireAtMs      int64             `json:"fire_at_ms"`
	NextAttemptMs *int64            `json:"next_attempt_ms,omitempty"`
	Attempts      int               `json:"attempts,omitempty"`
	Retry         *TimerRetry       `json:"retry,omitempty"`
	Target        Target            `json:"target"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	CreatedMs     int64             `json:"created_ms,omitempty"`
	UpdatedMs     int64             `json:"updated_ms,omitempty"`
	LastError     string            `json:"last_error,omitempty"`
	AttemptLog    []AttemptLogEntry `json:"attempt_log,omitempty"`
	Flow          string            `json:"flow,omitempty"`
	CreateDigest  string            `json:"create_digest,omitempty"`
	Traceparent   string            `json:"traceparent,omitempty"`
	Tracestate    string            `json:"tracestate,omitempty"`
}

// ExportSchedule is a schedule line of an export (Record is what an
// import reads; Schedule is for reading, nil when unreadable here).
type ExportSchedule struct {
	Kind     string    `json:"kind"` // schedule
	ID       string    `json:"id"`
	Record   string    `json:"record"`
	Schedule *Schedule `json:"schedule,omitempty"`
}

// ExportFlow is a flow line of an export.
type ExportFlow struct {
	Kind     string             `json:"kind"` // flow
	Key      string             `json:"key"`
	Settings StoredFlowSettings `json:"settings"`
}

// ExportEnd is the last line of a whole export.
type ExportEnd struct {
	Kind string `json:"kind"` // end
}

// ExportOptions pick what an export holds.
type ExportOptions struct {
	States []TimerState // none: every state, and the schedules and flows
	Limit  int          // records a page holds at most (1..10,000); 0: 1,000
}

// ExportLine is one line of an export; Kind says which shape it has
// (export, timer, schedule, flow, end): decode Raw into it.
type ExportLine struct {
	Kind string
	Raw  json.RawMessage
}

// ExportPage returns one page of an export and the cursor of the next
// ("" on the last): the first with cursor "", the next ones with the
// cursor of the page before (404 export_expired for one idle 5 minutes).
func (c *Client) ExportPage(ctx context.Context, o ExportOptions, cursor string) ([]ExportLine, string, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	} else if len(o.States) > 0 {
		states := make([]string, len(o.States))
		for i, s := range o.States {
			states[i] = string(s)
		}
		q.Set("state", strings.Join(states, ","))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	path := "/v1/admin/export"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	raw, header, err := c.callRaw(ctx, "GET", path, nil, map[string]string{"Accept": "application/x-ndjson"})
	if err != nil {
		return nil, "", err
	}
	var lines []ExportLine
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, "", &Error{Status: 200, Code: "invalid_answer", Message: "an export line: " + err.Error()}
		}
		lines = append(lines, ExportLine{Kind: kind.Kind, Raw: json.RawMessage(line)})
	}
	return lines, header.Get("Tickwheel-Export-Cursor"), nil
}

// Export calls fn for every line of an export from one snapshot, page
// after page (the header, the timers in id order, then, exporting every
// state, the schedules, flows and end), until fn returns false or the
// export ends.
func (c *Client) Export(ctx context.Context, o ExportOptions, fn func(ExportLine) bool) error {
	return eachPage("", func(cursor string) ([]ExportLine, string, error) {
		return c.ExportPage(ctx, o, cursor)
	}, fn)
}

// Import writes lines (an export's lines, ImportTimer values, ...: each
// marshalled to one JSON line) in one durable request of at most
// --max-batch lines. Importing the same lines again creates nothing new.
func (c *Client) Import(ctx context.Context, lines []interface{}) (*ImportResult, error) {
	var body bytes.Buffer
	for _, l := range lines {
		if raw, ok := l.(ExportLine); ok {
			l = raw.Raw
		}
		line, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		body.Write(line)
		body.WriteByte('\n')
	}
	raw, _, err := c.callRaw(ctx, "POST", "/v1/admin/import", body.Bytes(), nil)
	if err != nil {
		return nil, err
	}
	var out ImportResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, &Error{Status: 200, Code: "invalid_answer", Message: err.Error()}
	}
	return &out, nil
}

// Backup takes a hot backup of the embedded store into a new directory
// (400 backup_exists if it exists; backup_unsupported on a cluster node:
// use pg_dump).
func (c *Client) Backup(ctx context.Context, to string) (*Backup, error) {
	var out Backup
	return &out, c.call(ctx, "POST", "/v1/admin/backup", BackupRequest{To: to}, &out, nil)
}

func (c *Client) adminMode(ctx context.Context, path string) (*AdminMode, error) {
	var out AdminMode
	return &out, c.call(ctx, "POST", path, nil, &out, nil)
}

// PauseDelivery stops firing timers until ResumeDelivery (it waits for
// attempts in flight up to --drain-timeout).
func (c *Client) PauseDelivery(ctx context.Context) (*AdminMode, error) {
	return c.adminMode(ctx, "/v1/admin/delivery:pause")
}

// ResumeDelivery fires timers again.
func (c *Client) ResumeDelivery(ctx context.Context) (*AdminMode, error) {
	return c.adminMode(ctx, "/v1/admin/delivery:resume")
}

// PauseWrites makes clients' writes answer 503 writes_paused until
// ResumeWrites.
func (c *Client) PauseWrites(ctx context.Context) (*AdminMode, error) {
	return c.adminMode(ctx, "/v1/admin/writes:pause")
}

// ResumeWrites takes clients' writes again.
func (c *Client) ResumeWrites(ctx context.Context) (*AdminMode, error) {
	return c.adminMode(ctx, "/v1/admin/writes:resume")
}
