// SPDX-License-Identifier: Apache-2.0

package tickwheel

// Flows (docs/flows.md): their shapes and calls.

import (
	"context"
	"net/url"
	"strconv"
)

// FlowSettings are a flow's limits to store; nil fields are not given
// (the server's defaults apply).
type FlowSettings struct {
	RatePerS    *float64 `json:"rate_per_s,omitempty"`
	Burst       *int     `json:"burst,omitempty"`
	MaxInFlight *int     `json:"max_in_flight,omitempty"`
	Paused      *bool    `json:"paused,omitempty"`
}

// StoredFlowSettings are a flow's stored settings.
type StoredFlowSettings struct {
	RatePerS    *float64 `json:"rate_per_s,omitempty"`
	Burst       *int     `json:"burst,omitempty"`
	MaxInFlight *int     `json:"max_in_flight,omitempty"`
	Paused      bool     `json:"paused"`
	UpdatedMs   int64    `json:"updated_ms"`
}

// Flow is a flow's settings in effect and what it does now (nil: no
// limit).
type Flow struct {
	Key                 string              `json:"key"`
	Configured          bool                `json:"configured"`
	Settings            *StoredFlowSettings `json:"settings,omitempty"`
	RatePerS            *float64            `json:"rate_per_s"`
	Burst               *int                `json:"burst"`
	MaxInFlight         *int                `json:"max_in_flight"`
	Paused              bool                `json:"paused"`
	Due                 int64               `json:"due"`
	DueCapped           bool                `json:"due_capped"`
	InFlight            int64               `json:"in_flight"`
	SentLastMinute      int64               `json:"sent_last_minute"`
	DeliveredLastMinute int64               `json:"delivered_last_minute"`
	ThrottledLastMinute int64               `json:"throttled_last_minute"`
	LoweredRatePerS     *float64            `json:"lowered_rate_per_s"`
	HeldUntilMs         *int64              `json:"held_until_ms"`
}

// FlowPage is a page of flows; NextAfter is set while there may be more.
type FlowPage struct {
	Flows     []Flow `json:"flows"`
	NextAfter string `json:"next_after,omitempty"`
}

func flowPath(key string) string { return "/v1/flows/" + url.PathEscape(key) }

// ListFlowsPage returns one page of the configured flows and those active
// in the last minute, by key (limit 0: the server's 100).
func (c *Client) ListFlowsPage(ctx context.Context, after string, limit int) (*FlowPage, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/flows"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out FlowPage
	return &out, c.call(ctx, "GET", path, nil, &out, nil)
}

// ListFlows calls fn for every flow, page after page, until fn returns
// false or there are no more.
func (c *Client) ListFlows(ctx context.Context, limit int, fn func(Flow) bool) error {
	return eachPage("", func(after string) ([]Flow, string, error) {
		page, err := c.ListFlowsPage(ctx, after, limit)
		if err != nil {
			return nil, "", err
		}
		return page.Flows, page.NextAfter, nil
	}, fn)
}

// GetFlow returns a flow (one without settings shows the defaults).
func (c *Client) GetFlow(ctx context.Context, key string) (*Flow, error) {
	var out Flow
	return &out, c.call(ctx, "GET", flowPath(key), nil, &out, nil)
}

// SetFlow stores a flow's settings.
func (c *Client) SetFlow(ctx context.Context, key string, s FlowSettings) (*Flow, error) {
	var out Flow
	return &out, c.call(ctx, "PUT", flowPath(key), s, &out, nil)
}

// ResetFlow sets a flow back to the server's defaults.
func (c *Client) ResetFlow(ctx context.Context, key string) (*Flow, error) {
	var out Flow
	return &out, c.call(ctx, "DELETE", flowPath(key), nil, &out, nil)
}

// PauseFlow holds a flow's attempts until ResumeFlow.
func (c *Client) PauseFlow(ctx context.Context, key string) (*Flow, error) {
	var out Flow
	return &out, c.call(ctx, "POST", flowPath(key)+":pause", nil, &out, nil)
}

// ResumeFlow lets a paused flow's attempts go again.
func (c *Client) ResumeFlow(ctx context.Context, key string) (*Flow, error) {
	var out Flow
	return &out, c.call(ctx, "POST", flowPath(key)+":resume", nil, &out, nil)
}
