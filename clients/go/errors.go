// SPDX-License-Identifier: Apache-2.0

package tickwheel

import (
	"errors"
	"fmt"
)

// Error is an error answer of the server (Status 4xx/5xx, Code its stable
// code: "negative_delay", "not_found", ...), or no answer at all (Status
// 0, Code "connection"). Test it with errors.As, or with the Is* helpers.
type Error struct {
	Status  int
	Code    string
	Message string
	Field   string // the offending field, when there is one
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("tickwheel: %s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("tickwheel: %s: %s", e.Code, e.Message)
}

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return -1
}

// CodeOf is the server's error code of err ("" if err is no *Error).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsBadRequest: 400, bad input named by Field; nothing was stored.
func IsBadRequest(err error) bool { return statusOf(err) == 400 }

// IsUnauthorized: 401, no token or an unknown one (TICKWHEEL_TOKEN).
func IsUnauthorized(err error) bool { return statusOf(err) == 401 }

// IsForbidden: 403, a read token asked for a write.
func IsForbidden(err error) bool { return statusOf(err) == 403 }

// IsNotFound: 404, no such timer.
func IsNotFound(err error) bool { return statusOf(err) == 404 }

// IsConflict: 409, id_conflict, not_pending or not_failed.
func IsConflict(err error) bool { return statusOf(err) == 409 }

// IsUnavailable: 503 still after the retries, or no answer (Status 0).
func IsUnavailable(err error) bool { s := statusOf(err); return s == 503 || s == 0 }
