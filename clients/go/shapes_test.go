// SPDX-License-Identifier: Apache-2.0

package tickwheel

// The client's types against docs/openapi.json: each struct has a json
// field for every property of its schema and none the schema lacks, so a
// field the description gains and the client lacks fails here.

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Every object schema of the description, by name: a schema missing here
// fails the test too.
var shapes = map[string]interface{}{
	"UrlTarget": UrlTarget{}, "NatsTarget": NatsTarget{}, "RetryPolicy": RetryPolicy{},
	"CreateTimer": CreateTimer{}, "CreateTimers": CreateTimers{}, "Reschedule": Reschedule{},
	"TimerRetry": TimerRetry{}, "AttemptLogEntry": AttemptLogEntry{}, "Timer": Timer{},
	"TimerPage": TimerPage{}, "CreatedTimer": CreatedTimer{}, "CreatedTimers": CreatedTimers{},
	"DeadLetterFilter": DeadLetterFilter{}, "DeadLetterOutcome": DeadLetterOutcome{},
	"StateCounts": StateCounts{}, "DueCounts": DueCounts{}, "StoreInfo": StoreInfo{}, "Stats": Stats{},
	"SeriesPoint": SeriesPoint{}, "StatsSeries": StatsSeries{}, "SingleNode": SingleNode{},
	"ClusterNode": ClusterNode{}, "ShardLease": ShardLease{}, "ClusterState": ClusterState{},
	"Whoami": Whoami{}, "Health": Health{}, "ErrorDetail": ErrorDetail{}, "Error": ErrorBody{},
	"Delivery":       Delivery{},
	"CreateSchedule": CreateSchedule{}, "PatchSchedule": PatchSchedule{}, "ScheduleCounts": ScheduleCounts{},
	"UpcomingTime": UpcomingTime{}, "OccurrenceSummary": OccurrenceSummary{}, "Schedule": Schedule{},
	"SchedulePage": SchedulePage{}, "Backfill": Backfill{}, "BackfillOutcome": BackfillOutcome{},
	"FlowSettings": FlowSettings{}, "StoredFlowSettings": StoredFlowSettings{}, "Flow": Flow{},
	"FlowPage": FlowPage{}, "BackupRequest": BackupRequest{}, "Backup": Backup{}, "AdminMode": AdminMode{},
	"ImportConflict": ImportConflict{}, "ImportResult": ImportResult{}, "ExportHeader": ExportHeader{},
	"ExportTimer": ExportTimer{}, "ImportTimer": ImportTimer{}, "ExportSchedule": ExportSchedule{},
	"ExportFlow": ExportFlow{}, "ExportEnd": ExportEnd{},
}

// jsonNames are the json names of v's fields (of embedded structs too).
func jsonNames(v reflect.Type) []string {
	var names []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Anonymous {
			t := f.Type
			if t.Kind() == reflect.Ptr {
				t = t.Elem()
			}
			names = append(names, jsonNames(t)...)
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func TestEveryObjectSchemaHasAStructWithItsProperties(t *testing.T) {
	raw, err := os.ReadFile(env(t).openapi)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range shapes {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("docs/openapi.json has no schema %s", name)
			continue
		}
		var want []string
		for p := range schema.Properties {
			want = append(want, p)
		}
		sort.Strings(want)
		if got := jsonNames(reflect.TypeOf(v)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the struct has %v, the description %v", name, got, want)
		}
	}
	for name, schema := range doc.Components.Schemas {
		if _, ok := shapes[name]; !ok && len(schema.Properties) > 0 {
			t.Errorf("the client has no struct for the description's %s", name)
		}
	}
}
