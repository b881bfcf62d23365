// SPDX-License-Identifier: Apache-2.0

package tickwheel

// VerifyWebhook against the Standard Webhooks cases of
// clients/testdata/standard_webhooks.json (the specification's example
// and one change of it per case).

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"
)

func TestEveryStandardWebhooksCase(t *testing.T) {
	e := env(t)
	raw, err := os.ReadFile(e.vectors)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ToleranceSeconds int64 `json:"tolerance_seconds"`
		Cases            []struct {
			Name    string            `json:"name"`
			Secrets []string          `json:"secrets"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
			Now     int64             `json:"now"`
			Valid   bool              `json:"valid"`
			Reason  string            `json:"reason"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 15 {
		t.Fatalf("%d cases", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			header := http.Header{}
			for k, v := range c.Headers {
				header.Set(k, v) // canonical, as net/http gives them
			}
			d, err := VerifyWebhook(c.Secrets, header, []byte(c.Body), VerifyOptions{
				Now: time.Unix(c.Now, 0), Tolerance: time.Duration(doc.ToleranceSeconds) * time.Second})
			if c.Valid {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if d == nil {
					t.Fatal("no delivery")
				}
				return
			}
			var w *WebhookError
			if !errors.As(err, &w) || w.Reason != c.Reason {
				t.Fatalf("want a refusal for %q, got %v", c.Reason, err)
			}
		})
	}
}

func TestABadSecretIsAnErrorNotARefusal(t *testing.T) {
	_, err := VerifyWebhook([]string{"whsec_%%%"}, http.Header{}, []byte("{}"))
	var w *WebhookError
	if err == nil || errors.As(err, &w) {
		t.Fatalf("want a plain error, got %v", err)
	}
}
