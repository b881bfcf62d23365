// SPDX-License-Identifier: Apache-2.0

package tickwheel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's webhook-timestamp may be from
// the receiver's clock, either way.
const DefaultTolerance = 5 * time.Minute

// WebhookError says why a delivery is not to be trusted: Reason is
// "missing" (a webhook-* header), "timestamp" (stale, from the future or
// not a number: a replay) or "signature" (no entry matches a secret).
type WebhookError struct {
	Reason  string
	Message string
}

func (e *WebhookError) Error() string { return "tickwheel webhook: " + e.Message }

// VerifyOptions change VerifyWebhook's clock and tolerance (tests).
type VerifyOptions struct {
	Now       time.Time     // default: time.Now()
	Tolerance time.Duration // default: DefaultTolerance
}

// VerifyWebhook checks a delivery signed by a server started with
// --webhook-secret-file (Standard Webhooks): webhook-id,
// webhook-timestamp and webhook-signature against any of secrets
// ("whsec_..."; several while one is rotated), and returns its body. Pass
// the body exactly as received.
//
//	delivery, err := tickwheel.VerifyWebhook([]string{secret}, r.Header, body)
func VerifyWebhook(secrets []string, header http.Header, body []byte, opts ...VerifyOptions) (*Delivery, error) {
	var o VerifyOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("tickwheel webhook: no secret given")
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "whsec_"))
		if err != nil {
			return nil, fmt.Errorf("tickwheel webhook: a secret is whsec_ followed by base64: %w", err)
		}
		keys[i] = k
	}
	id, ts, sigs := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, &WebhookError{"missing", "the delivery lacks webhook-id, webhook-timestamp or webhook-signature"}
	}
	seconds, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || seconds < 0 {
		return nil, &WebhookError{"timestamp", fmt.Sprintf("webhook-timestamp %q is not Unix seconds", ts)}
	}
	if math.Abs(float64(o.Now.Unix()-seconds)) > o.Tolerance.Seconds() {
		return nil, &WebhookError{"timestamp", fmt.Sprintf(
			"webhook-timestamp %d is more than %v from now (%d): a replay, or a clock that is off",
			seconds, o.Tolerance, o.Now.Unix())}
	}
	for _, entry := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		given, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue
		}
		for _, k := range keys {
			mac := hmac.New(sha256.New, k)
			mac.Write([]byte(id + "." + ts + "."))
			mac.Write(body)
			if hmac.Equal(mac.Sum(nil), given) {
				var d Delivery
				if err := json.Unmarshal(body, &d); err != nil {
					return nil, fmt.Errorf("tickwheel webhook: the body is not a delivery: %w", err)
				}
				return &d, nil
			}
		}
	}
	return nil, &WebhookError{"signature", "no webhook-signature entry matches the secret(s)"}
}
