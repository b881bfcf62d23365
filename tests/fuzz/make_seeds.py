#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of tests/fuzz/corpus/<target>/: a handful of
small inputs per target, each a meaningful case, so that every run starts
from the interesting shapes rather than from nothing.

The operation-sequence fuzzers (wheel, timing_wheel, timer_service) decode
their input with LLVM's FuzzedDataProvider (fuzz_source.h): each choice
`Uniform(lo, hi)` takes just enough bytes for hi - lo from the *end* of the
input, most significant first, modulo (hi - lo + 1). `Choices` below writes
such inputs: one call per choice, in the order the fuzzer makes them (see
each target's decoder). A seed's choices must follow the target's code; if
it is changed, re-run this script (a seed that decodes to something else is
still a valid input, just a less meaningful one).

    python3 tests/fuzz/make_seeds.py   # rewrites tests/fuzz/corpus/
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class Choices:
    def __init__(self):
        self.stream = bytearray()

    def uniform(self, lo, hi, value):
        assert lo <= value <= hi, (lo, hi, value)
        span = (hi - lo) % (1 << 64)
        n, offset = 0, 0
        while offset < 64 and (span >> offset) > 0:
            n += 1
            offset += 8
        if n:
            self.stream += (value - lo).to_bytes(n, 'big')
        return self

    def bool(self, b):
        return self.uniform(0, 255, 1 if b else 0)

    def data(self):
        return bytes(reversed(self.stream))


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- wheel_fuzz (wheel_fuzz.cc, then WheelModel in tests/wheel_model.h) ----
TICKS = [1, 7, 1000, 1_000_000, 7_000_000, 1_000_000_000, 3_600_000_000_000]


class WheelSeed(Choices):
    def __init__(self, tick_index=None, raw_tick=None, origin=('typical', 17),
                 dense=False, boxed=False):
        super().__init__()
        if raw_tick is not None:
            self.uniform(0, 7, 0).uniform(1, I64_MAX, raw_tick)
        else:
            self.uniform(0, 7, 1).uniform(0, 6, tick_index)
        kind, v = origin
        case = {'zero': 0, 'typical': 1, 'end': 2, 'raw': 3}[kind]
        self.uniform(0, 3, case)
        if kind == 'typical':
            self.uniform(0, 999, v)
        elif kind == 'end':
            self.uniform(0, 1 << 50, v)
        elif kind == 'raw':
            self.uniform(I64_MIN, I64_MAX, v)
        self.dense = dense
        self.bool(dense).bool(boxed)

    # RandomTicks() in the spread mode: (case, ticks).
    def ticks(self, n):
        for case, hi in ((0, 3), (3, 130), (5, 1 << 18), (7, 1 << 30), (8, 1 << 42),
                         (9, 1 << 60)):
            if n <= hi:
                self.uniform(0, 9, case).uniform(0, hi, n)
                return
        raise ValueError(n)

    def deadline(self, ticks, sub=0, past=False, tick=1):
        self.uniform(0, 15, 1)  # not a raw deadline
        self.ticks(ticks)
        self.uniform(-tick, tick, sub)
        self.uniform(0, 9, 0 if past else 1)
        return self

    def schedule(self, ticks, sub=0, past=False, tick=1):
        self.uniform(0, 99, 0)
        return self.deadline(ticks, sub, past, tick)

    def schedule_raw(self, ns):
        self.uniform(0, 99, 0).uniform(0, 15, 0).uniform(I64_MIN, I64_MAX, ns)
        return self

    def cancel(self, index, pending):
        self.uniform(0, 99, 40).uniform(0, 9, 1).uniform(0, pending - 1, index)
        return self

    def cancel_dead(self, index, dead):
        self.uniform(0, 99, 40).uniform(0, 9, 0).uniform(0, 3, 1).uniform(0, dead - 1, index)
        return self

    def cancel_forged(self, index, generation):
        self.uniform(0, 99, 40).uniform(0, 9, 0).uniform(0, 3, 0)
        self.uniform(0, 70, index).uniform(0, 3, generation)
        return self

    def heartbeat(self, index, pending, ticks):
        self.uniform(0, 99, 52).uniform(0, 9, 1).uniform(0, pending - 1, index)
        self.uniform(0, 1, 0).uniform(0, 100, ticks)
        return self

    def advance(self, ticks, sub=0, tick=1):
        self.uniform(0, 99, 72).ticks(ticks)
        self.uniform(0, tick, sub)
        return self

    def to_next_deadline(self):
        return self.uniform(0, 99, 97)

    # What a callback does for one fired timer: nothing, or throw.
    def fired(self, throw=False):
        return self.uniform(0, 19, 19).uniform(0, 15, 0 if throw else 15)


def wheel_seeds():
    ms = 1_000_000
    # Heartbeats at 1 ms: schedule, push one later, cancel one, fire the rest.
    s = WheelSeed(tick_index=3)
    s.schedule(5, tick=ms).schedule(130, tick=ms).schedule(1 << 20, tick=ms)
    s.heartbeat(1, 3, 100).cancel(0, 3)
    s.advance(400, tick=ms).fired()           # the heartbeat timer (tick 230)
    s.cancel_dead(0, 2)                       # a cancelled id is refused
    s.advance(1 << 21, tick=ms).fired()       # the far one
    s.to_next_deadline()
    write('wheel_fuzz', 'heartbeats_1ms', s.data())
    # Sub-tick deadlines at 7 ms: rounding up, never early.
    s = WheelSeed(tick_index=4)
    s.schedule(1, sub=1, tick=7 * ms).schedule(1, sub=-1, tick=7 * ms)
    s.schedule(0, sub=3, past=True, tick=7 * ms)
    s.advance(0, sub=1, tick=7 * ms).fired()  # the past one is due at once
    s.advance(1, sub=0, tick=7 * ms).fired().fired()
    write('wheel_fuzz', 'sub_tick_rounding_7ms', s.data())
    # Near the end of time at 1 ns: clamped deadlines.
    s = WheelSeed(tick_index=0, origin=('end', 1000))
    s.schedule_raw(I64_MAX).schedule(1 << 42).schedule_raw(I64_MIN)
    s.advance(2).fired()
    s.to_next_deadline()
    write('wheel_fuzz', 'end_of_time_1ns', s.data())
    # A callback that throws; the other timer must still fire, next Advance.
    s = WheelSeed(tick_index=2, origin=('zero', 0), boxed=True)
    s.schedule(2, tick=1000).schedule(2, tick=1000)
    s.advance(3, tick=1000).fired(throw=True)
    s.advance(0, tick=1000).fired()
    s.cancel_forged(0, 1)
    write('wheel_fuzz', 'throwing_callback_boxed', s.data())
    # Dense: many timers over a few level-1 revolutions, small steps.
    s = WheelSeed(tick_index=2, dense=True)
    for t in (4095, 4096, 4097, 64, 8191, 12000):
        s.uniform(0, 99, 0).uniform(0, 15, 1)
        s.uniform(0, 9, 1).uniform(0, 3 * 4096, t)  # dense RandomTicks
        s.uniform(-1000, 1000, 0).uniform(0, 9, 1)
    for _ in range(3):
        s.uniform(0, 99, 72).uniform(0, 40, 40).uniform(0, 1000, 0)
    write('wheel_fuzz', 'dense_spread_cascades', s.data())
    # Any tick: 2^40 ns, with a negative origin.
    s = WheelSeed(raw_tick=1 << 40, origin=('raw', -(1 << 62)))
    s.schedule(3, tick=1 << 40).schedule(1 << 18, tick=1 << 40)
    s.advance(4, tick=1 << 40).fired()
    write('wheel_fuzz', 'huge_tick_negative_origin', s.data())


# --- timing_wheel_fuzz and timer_service_fuzz (runtime_fuzz.h decoders) ---
RUNTIME_TICKS = [1, 1000, 1_000_000, 7_000_000, 1_000_000_000]


class RuntimeSeed(Choices):
    def __init__(self, tick_index, shards=1, start=None):
        super().__init__()
        if start is None:
            self.bool(True)
        else:
            self.bool(False).uniform(-(1 << 61), 1 << 61, start)
        self.tick = RUNTIME_TICKS[tick_index]
        self.uniform(0, 4, 1).uniform(0, 4, tick_index)
        self.uniform(1, 4, shards)

    def ticks(self, n):
        return min(n * self.tick, I64_MAX)

    # DecodeDelay: ('now',) ('min',) ('sub', ns) ('few', ns) ('many', ns)
    # ('exact', n ticks) ('max',) ('any', ns).
    def delay(self, kind, v=None):
        if kind == 'now':
            self.uniform(0, 7, 0).bool(False).uniform(0, 1_000_000, 0)
        elif kind == 'min':
            self.uniform(0, 7, 0).bool(True)
        elif kind == 'sub':
            self.uniform(0, 7, 1).uniform(1, self.tick, v)
        elif kind == 'few':
            self.uniform(0, 7, 2).uniform(1, self.ticks(5), v)
        elif kind == 'many':
            self.uniform(0, 7, 4).uniform(1, self.ticks(300), v)
        elif kind == 'exact':
            self.uniform(0, 7, 6).uniform(1, 100, v)
        elif kind == 'max':
            self.uniform(0, 7, 7).bool(True)
        else:
            self.uniform(0, 7, 7).bool(False).uniform(1, I64_MAX, v)
        return self

    # DecodeStep: ('sub', ns) ('few', ns) ('exact', n ticks) ('many', ns).
    def step(self, kind, v):
        case = {'sub': 0, 'few': 1, 'exact': 3, 'many': 4}[kind]
        self.uniform(0, 5, case)
        if kind == 'sub':
            self.uniform(1, self.tick, v)
        elif kind == 'few':
            self.uniform(1, self.ticks(4), v)
        elif kind == 'exact':
            self.uniform(1, 10, v)
        else:
            self.uniform(1, self.ticks(400), v)
        return self


class TimingWheelSeed(RuntimeSeed):
    def set(self, key, delay, rearm=None):
        self.uniform(0, 11, 0).uniform(0, 5, key).delay(*delay)
        if rearm is None:
            self.uniform(0, 3, 1)
        else:
            self.uniform(0, 3, 0).uniform(1, max(self.tick * 3, 1), rearm)
        return self

    def move(self, key, delay):
        return self.uniform(0, 11, 3).uniform(0, 5, key).delay(*delay)

    def remove(self, key):
        return self.uniform(0, 11, 5).uniform(0, 5, key)

    def advance(self, *step):
        return self.uniform(0, 11, 6).step(*step)

    def drain(self):
        return self.uniform(0, 11, 9)

    def stop(self):
        return self.uniform(0, 11, 10).uniform(0, 7, 0)


def timing_wheel_seeds():
    s = TimingWheelSeed(tick_index=4)  # go-zero's 1 s interval
    s.set(1, ('exact', 3)).set(2, ('exact', 5)).move(1, ('exact', 2))
    s.advance('exact', 1).move(2, ('sub', 1)).remove(1)
    s.advance('exact', 2).advance('exact', 3)
    write('timing_wheel_fuzz', 'set_move_remove_1s', s.data())
    s = TimingWheelSeed(tick_index=2, shards=3)  # heartbeats at 1 ms
    for key in range(4):
        s.set(key, ('few', 2_500_000 + key))
    s.advance('few', 1_000_000)
    for key in range(4):
        s.move(key, ('few', 2_500_000))
    s.advance('many', 10_000_000)
    write('timing_wheel_fuzz', 'heartbeats_3_shards', s.data())
    s = TimingWheelSeed(tick_index=1, shards=2)
    s.set(0, ('now',)).set(1, ('min',)).set(2, ('few', 1500)).set(2, ('now',))
    s.move(0, ('now',)).set(3, ('max',)).set(4, ('any', 1 << 62))
    s.advance('many', 299_000)
    write('timing_wheel_fuzz', 'at_once_and_longest_delays', s.data())
    s = TimingWheelSeed(tick_index=3, start=-(1 << 40))
    s.set(0, ('exact', 1), rearm=7_000_001).set(1, ('exact', 2), rearm=1)
    s.advance('exact', 1).advance('exact', 2).advance('exact', 2)
    write('timing_wheel_fuzz', 'rearm_from_execute', s.data())
    s = TimingWheelSeed(tick_index=0, shards=4)
    s.set(0, ('sub', 1)).set(1, ('many', 200)).set(2, ('few', 3))
    s.drain().set(1, ('few', 2)).advance('few', 1).advance('few', 4)
    s.stop().set(5, ('now',)).advance('many', 100)
    write('timing_wheel_fuzz', 'drain_then_stop_1ns', s.data())


class TimerServiceSeed(RuntimeSeed):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.count = 0

    def after(self, *delay):
        self.count += 1
        return self.uniform(0, 11, 0).delay(*delay)

    def at(self, offset):
        self.count += 1
        return self.uniform(0, 11, 2).uniform(0, 3, 1).uniform(-(1 << 40), 1 << 40, offset)

    def at_raw(self, ns):
        self.count += 1
        return self.uniform(0, 11, 2).uniform(0, 3, 0).uniform(I64_MIN, I64_MAX, ns)

    def every(self, *period):
        self.count += 1
        return self.uniform(0, 11, 3).delay(*period)

    def pick(self, index):
        return self.uniform(0, 9, 1).uniform(0, self.count - 1, index)

    def cancel(self, index):
        return self.uniform(0, 11, 4).pick(index)

    def reschedule(self, index, *delay):
        return self.uniform(0, 11, 6).pick(index).delay(*delay)

    def advance(self, *step):
        return self.uniform(0, 11, 8).step(*step)

    def stop(self):
        return self.uniform(0, 11, 11).uniform(0, 7, 0)


def timer_service_seeds():
    s = TimerServiceSeed(tick_index=2)  # 1 ms ticks
    s.after('few', 2_000_000).every('exact', 3).after('now')
    s.advance('exact', 3).advance('many', 100_000_000)  # skips missed runs
    s.cancel(1).advance('exact', 10)
    write('timer_service_fuzz', 'after_every_skip_1ms', s.data())
    s = TimerServiceSeed(tick_index=4, shards=2)
    s.every('exact', 2).advance('exact', 1).reschedule(0, 'exact', 5)
    s.advance('exact', 4).advance('exact', 1).advance('exact', 5)
    write('timer_service_fuzz', 'reschedule_repeat_phase_1s', s.data())
    s = TimerServiceSeed(tick_index=1)
    s.at(-5).at(1500).at_raw(I64_MIN).at_raw(I64_MAX).after('max').every('max')
    s.advance('few', 2000).reschedule(1, 'now').cancel(0)
    write('timer_service_fuzz', 'at_past_future_and_longest', s.data())
    s = TimerServiceSeed(tick_index=0, shards=4, start=1 << 50)
    s.every('sub', 1).after('few', 3).advance('few', 2).advance('few', 4)
    s.stop().after('now').advance('few', 4)
    write('timer_service_fuzz', 'stop_then_calls_fail_1ns', s.data())
    s = TimerServiceSeed(tick_index=3)
    s.every('any', (1 << 62) + 1).advance('many', 1).uniform(0, 11, 8).uniform(0, 5, 5).uniform(1, 1 << 50, 1 << 50)
    write('timer_service_fuzz', 'repeat_past_end_of_time', s.data())


# --- the server's decoders ----------------------------------------------
def request_header(mode, flags=0, raw=0):
    return bytes([ord(mode), flags]) + raw.to_bytes(6, 'little')


def server_seeds():
    H = request_header
    for name, data in {
        'create_delay': H('c') + b'{"id":"order-42","delay_ms":30000,"payload":{"order":42,"items":[1,2]},"target":{"url":"http://127.0.0.1:9000/hook?x=1"}}',
        'create_fire_at_retry': H('c') + b'{"fire_at_ms":1700000060000,"target":{"url":"http://hooks.example:8080/"},"retry":{"max_attempts":5,"backoff_ms":250}}',
        'create_nats': H('c', 32) + b'{"id":"a.b_c~d-e","delay_ms":0,"payload":"hi","target":{"nats":"timers.orders.created"}}',
        'create_https_headers': H('c', 128) + b'{"delay_ms":5,"target":{"url":"HTTPS://Hooks.Example/p?q=1#f","headers":{"Authorization":"Bearer x","X-Trace":"a\\tb"}}}',
        'create_reserved_header': H('c') + b'{"delay_ms":5,"target":{"url":"http://h/","headers":{"Host":"evil"}}}',
        'create_typo': H('c') + b'{"delay":10,"target":{"url":"http://h/"}}',
        # Every bound, valid on it and refused one past it (10 years is the
        # default horizon): a decoder off by one either way fails at once.
        'create_upper_bounds': H('c') + b'{"delay_ms":315360000000,"target":{"url":"http://h/"},"retry":{"max_attempts":100,"backoff_ms":86400000}}',
        'create_lower_bounds': H('c') + b'{"delay_ms":0,"target":{"url":"http://h/"},"retry":{"max_attempts":1,"backoff_ms":1}}',
        'create_past_the_bounds': H('c') + b'{"delay_ms":315360000001,"target":{"url":"http://h/"},"retry":{"max_attempts":101,"backoff_ms":86400001}}',
        'create_attempts_past_the_bound': H('c') + b'{"delay_ms":1,"target":{"url":"http://h/"},"retry":{"max_attempts":101}}',
        'create_backoff_past_the_bound': H('c') + b'{"delay_ms":1,"target":{"url":"http://h/"},"retry":{"backoff_ms":86400001}}',
        'reschedule_at_the_horizon': H('r') + b'{"fire_at_ms":2015360000000}',
        'reschedule_past_the_horizon': H('r') + b'{"fire_at_ms":2015360000001}',
        'create_payload_limit': H('c', 4) + b'{"delay_ms":1,"payload":[true,false,null],"target":{"url":"http://h:1/"}}',
        'batch': H('b', 16) + b'{"timers":[{"id":"a","delay_ms":1,"target":{"url":"http://h/"}},{"id":"b","fire_at_ms":0,"target":{"url":"http://h:65535/p"}},{"id":"a","delay_ms":2,"target":{"url":"http://h/"}}]}',
        'reschedule': H('r') + b'{"delay_ms":-5}',
        'reschedule_at': H('r', 64, 1234567) + b'{"fire_at_ms":1234999}',
        'id': H('i') + b'order-42.retry_~1',
        'subject': H('s') + b'timers.a.b',
    }.items():
        write('timer_request_fuzz', name, data)
    for name, url in {
        'plain': 'http://127.0.0.1:9000/hook', 'query_only': 'http://hooks.example?x=1',
        'no_path': 'http://h', 'port_max': 'http://a-b.c_d:65535/p/q?r=s&t=u',
        'https': 'https://h/', 'creds': 'http://user:pw@h/', 'bad_port': 'http://h:0/',
        'ipv6': 'http://[::1]:8080/p', 'upper_case': 'HTTP://Example.COM:00080/A?b#c',
        'ftp': 'ftp://h/',
    }.items():
        write('http_url_fuzz', name, url)

    def times(state, fire, due, att, maxa, back, cr, up):
        return struct.pack('<BqqIIIqq', state, fire, due, att, maxa, back, cr, up)

    def string(b):
        return struct.pack('<I', len(b)) + b

    def format1(state, target, payload, err, h=12345):
        return (b'\x01' + times(state, 1700000000000, 1700000000000, 0, 10, 1000, 1, 2) +
                struct.pack('<Q', h) + string(target) + string(payload) + string(err))

    def format2(state, target, payload, err, headers=(), log=(), kind=1):
        b = b'\x02' + times(state, 1700000000000, 1700000005000, 2, 10, 1000, 1, 2)
        b += bytes([kind]) + bytes(range(32)) + string(target)
        b += struct.pack('<H', len(headers))
        for name, value in headers:
            b += string(name) + string(value)
        b += string(payload) + string(err) + bytes([len(log)])
        for started, duration, status, error in log:
            b += struct.pack('<qIi', started, duration, status) + string(error)
        return b
    write('timer_record_fuzz', 'format1_pending', b'\x00' + format1(0, b'http://h/', b'{"a":1}', b''))
    write('timer_record_fuzz', 'format2_failed', b'\x00' + format2(
        3, b'https://h/x', b'null', b'HTTP 500', headers=[(b'Authorization', b'Bearer t')],
        log=[(1700000000000, 12, 500, b'HTTP 500'), (1700000001000, 30000, 0, b'timeout')]))
    write('timer_record_fuzz', 'format2_truncated', b'\x00' + format2(1, b'nats:a.b', b'[]', b'')[:-3])
    write('timer_record_fuzz', 'format2_bad_digest_kind', b'\x00' + format2(0, b'', b'', b'', kind=9))
    write('timer_record_fuzz', 'roundtrip', b'\x01' + bytes(range(256)))
    write('timer_record_fuzz', 'state_name', b'\x00delivering')
    for name, q in {
        'state': 'state=failed', 'all': 'state=pending&limit=1000&after=1700000000000:order-42',
        'percent': 'st%61te=deliver%65d&limit=%31%30&after=-5%3Aa.b', 'bad_escape': 'state=%zz',
        'limit_zero': 'state=failed&limit=0', 'unknown': 'state=failed&sort=asc',
        'empty_pair': '&state=cancelled&', 'bad_after': 'state=delivered&after=a/b',
        'no_state': 'limit=5', 'limit_past_the_bound': 'state=failed&limit=1001',
        'limit_leading_zeros': 'state=failed&limit=0001&limit=7',
        'after_int64_min': 'state=failed&after=-9223372036854775808:a',
        'after_past_int64': 'state=failed&after=9223372036854775808:a',
    }.items():
        write('list_query_fuzz', name, q)
    body = b'{"id":"order-42","delay_ms":30000,"payload":{"n":1},"target":{"url":"http://127.0.0.1:9000/hook"}}'
    for name, data in {
        'create': bytes([0, 0]) + b'POST /v1/timers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body) + body,
        'create_traced': bytes([0, 0]) + b'POST /v1/timers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ntracestate: rojo=00f067aa0ba902b7,congo=t61rcWkgMzE\r\ntracestate: a=b\r\nContent-Length: %d\r\n\r\n' % len(body) + body,
        'create_chunked_pieces': bytes([0, 7]) + b'POST /v1/timers HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n' % len(body) + body + b'\r\n0\r\n\r\n',
        'pipelined': bytes([0, 0]) + b'GET /v1/timers?state=failed&limit=10 HTTP/1.1\r\nHost: h\r\n\r\nDELETE /v1/timers/order-42 HTTP/1.1\r\nHost: h\r\n\r\nPOST /v1/timers/order-42:retry HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
        'patch': bytes([0, 3]) + b'PATCH /v1/timers/a.b HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n{"delay_ms":5000}',
        'body_over_limit': bytes([1, 0]) + b'POST /v1/timers HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n' + b'x' * 100,
        'http10': bytes([0, 0]) + b'GET /healthz HTTP/1.0\r\n\r\n',
        'flow_routes': bytes([0, 0]) + b'PUT /v1/flows/api.example.com%3A443 HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n{"rate":100}POST /v1/flows/a%2Fb:pause HTTP/1.1\r\nHost: h\r\n\r\nPOST /v1/flows/x%zz:resume HTTP/1.1\r\nHost: h\r\n\r\nGET /v1/flows HTTP/1.1\r\nHost: h\r\n\r\n',
        'fixed_routes': bytes([0, 0]) + b''.join(b'GET %s HTTP/1.1\r\nHost: h\r\n\r\n' % p for p in (
            b'/metrics', b'/v1/whoami', b'/v1/stats', b'/v1/stats/series', b'/v1/cluster',
            b'/v1/timers/:retry', b'/v1/timers/a:retry?show_headers=true', b'/v1')),
        'schedule_routes': bytes([0, 0]) + b'GET /v1/schedules?state=active HTTP/1.1\r\nHost: h\r\n\r\nPATCH /v1/schedules/daily%2Dreport HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}POST /v1/schedules/r:trigger HTTP/1.1\r\nHost: h\r\n\r\nPOST /v1/schedules/r%3Apause:backfill HTTP/1.1\r\nHost: h\r\n\r\nGET /v1/timers/daily-report@1795430400000 HTTP/1.1\r\nHost: h\r\n\r\nPOST /v1/timers/r%401795430400000:retry HTTP/1.1\r\nHost: h\r\n\r\nDELETE /v1/timers/r@0123 HTTP/1.1\r\nHost: h\r\n\r\n',
        'batch_and_bulk': bytes([0, 0]) + b'POST /v1/timers:batch HTTP/1.1\r\nHost: h\r\nContent-Length: 16\r\n\r\n{"timers":[{}]}\nPOST /v1/timers:retry-failed HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}POST /v1/timers:delete-failed HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}',
    }.items():
        write('http_request_fuzz', name, data)


# --- cron_recurrence_fuzz (cron_recurrence_fuzz.cc) --------------------------
CRON_ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe',
              'Asia/Tokyo', 'Pacific/Chatham', 'America/Havana', 'Antarctica/Troll',
              'Europe/Dublin', 'Asia/Kathmandu']
CRON_BASE_MS = 631152000000  # 1990-01-01


def cron_input(text, zone='UTC', skip=False, both=False, start_ms=1774000000000, raw=None):
    """The expression, NUL, zone index, flags, and the start: an instant of
    1990-2100 (start_ms), or any int64 taken as is (raw)."""
    flags = (1 if skip else 0) | (2 if both else 0) | (4 if raw is not None else 0)
    value = raw if raw is not None else start_ms - CRON_BASE_MS
    return (text.encode() + b'\0' + bytes([CRON_ZONES.index(zone), flags]) +
            struct.pack('<q', value))


def cron_seeds():
    berlin_gap = 1774746000000 - 1800_000     # 2026-03-29 02:30 CET, 30 min before
    berlin_overlap = 1792886400000 - 600_000  # 2026-10-25 01:50 CEST
    new_york_overlap = 1793509200000          # 2026-11-01 01:00 EDT
    lord_howe_gap = 1791041400000 - 900_000   # 2026-10-04, a quarter before
    lord_howe_overlap = 1775313000000         # 2026-04-05 01:30 +11
    for name, data in {
        'weekdays': cron_input('0 9 * * MON-FRI', 'Europe/Berlin', start_ms=1774000000000),
        'gap_shift': cron_input('*/10 2 * * *', 'Europe/Berlin', start_ms=berlin_gap),
        'gap_skip': cron_input('30 2 * * *', 'Europe/Berlin', skip=True, start_ms=berlin_gap),
        'overlap_first': cron_input('*/5 * * * *', 'Europe/Berlin', start_ms=berlin_overlap),
        'overlap_both': cron_input('*/5 * * * *', 'Europe/Berlin', both=True,
                                   start_ms=berlin_overlap),
        'new_york_both': cron_input('30 1 * * *', 'America/New_York', both=True,
                                    start_ms=new_york_overlap),
        'lord_howe_gap': cron_input('*/7 * * * * *', 'Australia/Lord_Howe',
                                    start_ms=lord_howe_gap),
        'lord_howe_both': cron_input('0,45 1 * * *', 'Australia/Lord_Howe', both=True,
                                     start_ms=lord_howe_overlap),
        'chatham': cron_input('45 2-3 * * *', 'Pacific/Chatham', start_ms=1775300000000),
        'havana_midnight': cron_input('0 0 * * *', 'America/Havana', start_ms=1772900000000),
        'troll_two_hours': cron_input('*/20 * * * *', 'Antarctica/Troll', start_ms=1774740000000),
        'leap_day': cron_input('0 12 29 2 *', 'Asia/Tokyo', start_ms=1709000000000),
        'fifth_monday_feb': cron_input('0 0 * 2 MON#5', 'UTC', start_ms=2340316800001),
        'last_friday': cron_input('0 17 * * FRIL', 'Europe/Dublin', start_ms=1790000000000),
        'nearest_weekday': cron_input('0 8 1W,15W,LW * *', 'Asia/Kathmandu',
                                      start_ms=1785000000000),
        'or_rule': cron_input('0 0 13 * FRI', 'UTC', start_ms=1774000000000),
        'impossible': cron_input('0 0 30 2 *', 'UTC', start_ms=1774000000000),
        'skip_forever': cron_input('30 2 * 3 SUN#5', 'Europe/Berlin', skip=True,
                                   start_ms=1767225600000),
        'macro': cron_input('@hourly', 'Asia/Tokyo', start_ms=1774000000000),
        'year_9999': cron_input('59 59 23 31 12 *', 'UTC', raw=253402300000000),
        'int64_min': cron_input('* * * * * *', 'UTC', raw=I64_MIN),
        'int64_max': cron_input('* * * * *', 'Pacific/Chatham', raw=I64_MAX),
        'bad_day_of_week': cron_input('0 0 * * 8'),
        'bad_range': cron_input('0 20-5 * * *'),
        'bad_names': cron_input('0 0 * MON JAN'),
        'four_fields': cron_input('* * * *'),
        'empty': b'',
    }.items():
        write('cron_recurrence_fuzz', name, data)


if __name__ == '__main__':
    wheel_seeds()
    timing_wheel_seeds()
    timer_service_seeds()
    server_seeds()
    cron_seeds()
