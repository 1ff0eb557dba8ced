"""One user request through the shop as a trace: the six request flows, their errors and the incident.

Each flow is written as the services would run it (frontend → api-gateway → auth/cart/checkout →
payment/inventory/shipping → Kafka → email) on the primitives of ``spanbuilder``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bzrk.demo.spanbuilder import (
    CLIENT,
    CONSUMER,
    DEBUG,
    ERR,
    ERROR,
    INFO,
    MS,
    PRODUCER,
    SERVER,
    WARN,
    OpenSpan,
    TraceBuilder,
    log_attrs,
    span_attr,
)
from bzrk.demo.topology import Topology

USER_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
)
CARRIERS = (("DHL", "Express"), ("UPS", "Standard"), ("DPD", "Classic"), ("GLS", "Business"))
DECLINE_REASONS = ("insufficient_funds", "card_expired", "do_not_honor", "incorrect_cvc")

NPE_STACK = (
    'java.lang.NullPointerException: Cannot invoke "com.shop.checkout.model.Address.getCountry()" '
    'because "order.shippingAddress" is null\n'
    "\tat com.shop.checkout.tax.TaxCalculator.computeTax(TaxCalculator.java:214)\n"
    "\tat com.shop.checkout.CheckoutService.placeOrder(CheckoutService.java:131)\n"
    "\tat com.shop.checkout.api.CheckoutController.checkout(CheckoutController.java:58)\n"
    "\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)"
)
LOCK_TIMEOUT_STACK = (
    "org.springframework.dao.CannotAcquireLockException: could not execute statement; "
    "nested exception is org.postgresql.util.PSQLException: ERROR: canceling statement due to lock timeout\n"
    "\tat com.shop.payment.PaymentRepository.markCaptured(PaymentRepository.java:88)\n"
    "\tat com.shop.payment.PaymentService.capture(PaymentService.java:152)\n"
    "\tat com.shop.payment.api.PaymentController.charge(PaymentController.java:47)\n"
    "Caused by: org.postgresql.util.PSQLException: ERROR: canceling statement due to lock timeout\n"
    "\tat org.postgresql.core.v3.QueryExecutorImpl.receiveErrorResponse(QueryExecutorImpl.java:2725)"
)
DEADLOCK_STACK = (
    "org.springframework.dao.DeadlockLoserDataAccessException: could not execute statement; "
    "nested exception is org.postgresql.util.PSQLException: ERROR: deadlock detected\n"
    "\tat com.shop.payment.PaymentRepository.markCaptured(PaymentRepository.java:88)\n"
    "\tat com.shop.payment.PaymentService.capture(PaymentService.java:152)\n"
    "\tat com.shop.payment.api.PaymentController.charge(PaymentController.java:47)"
)


class TraceSimulator(TraceBuilder):
    """The shop's request flows; ``trace(t0)`` simulates one request from the frontend down."""

    def __init__(
        self, topology: Topology, rng: random.Random, *, emit_spans: bool = True,
        deadlock_slots: list[int] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(topology, rng, emit_spans=emit_spans)
        # Moments in the incident after which the next payment capture deadlocks (≤ 5 in all).
        self.deadlock_slots = sorted(deadlock_slots or [])
        # Lock timeouts so far: the incident's first payment capture that does not deadlock
        # times out, so every demo day shows one (the vendor's lock-timeout searches find it).
        self.lock_timeouts = 0
        self._flows: list[tuple[float, Callable[[OpenSpan], int], str, str]] = [
            (0.30, self._flow_home, "GET", "/"),
            (0.30, self._flow_product, "GET", "/product/{id}"),
            (0.14, self._flow_add_to_cart, "POST", "/cart"),
            (0.09, self._flow_checkout, "POST", "/checkout"),
            (0.08, self._flow_login, "POST", "/login"),
            (0.09, self._flow_search, "GET", "/search"),
        ]
        total = 0.0
        self._cum: list[float] = []
        for weight, *_ in self._flows:
            total += weight
            self._cum.append(total)

    # -- one trace -------------------------------------------------------------------------

    def trace(self, t0: int) -> int:
        """Simulate one request starting at ``t0``; returns the trace's end time."""
        rng = self.rng
        self._trace_id = rng.getrandbits(128).to_bytes(16, "big")
        self._incident = t0 in self.topo.incident
        x = rng.random() * self._cum[-1]
        index = 0
        while self._cum[index] < x:
            index += 1
        _, flow, method, route = self._flows[index]
        pod = self.topo.pod("frontend", t0, rng)
        user, ip = self._user(), self._public_ip()
        path = route.replace("{id}", self._sku())
        if route == "/search":
            path = (
                "/search?q="
                + ("shoes", "jacket", "lamp", "headphones", "mug", "backpack")[
                    int(rng.random() * 6)
                ]
            )
        root = self._open(pod, "server", f"{method} {route}", SERVER, t0, None)
        root.attrs += [
            span_attr("http.request.method", method),
            span_attr("http.route", route),
            span_attr("url.path", path),
            span_attr("url.scheme", "https"),
            span_attr("server.address", "shop.example.com"),
            span_attr("client.address", ip),
            span_attr("user_agent.original", USER_AGENTS[int(rng.random() * len(USER_AGENTS))]),
            span_attr("enduser.id", user),
        ]
        root.t += self._ms(0.3)
        self._user_id = user
        self._client_ip = ip
        self._async_end = 0
        status = flow(root)
        root.attrs.append(span_attr("http.response.status_code", status))
        if status >= 500:
            root.status = ERROR
            root.message = f"HTTP {status}"
        end_pending = root.t
        root.t = end_pending + self._ms(1.5, 0.6)
        duration_ms = (root.t - root.start) / MS
        severity = INFO if status < 400 else WARN if status < 500 else ERR
        self._log(
            root,
            severity,
            f'{ip} - {user} "{method} {path} HTTP/1.1" {status} {int(rng.random() * 40000) + 800} '
            f"{duration_ms:.1f}ms",
            log_attrs(
                ("http.method", method),
                ("http.route", route),
                ("http.status_code", status),
                ("duration_ms", round(duration_ms, 3)),
                ("user.id", user),
                ("client.ip", ip),
            ),
        )
        self._close(root, 0.05)
        return max(root.end, self._async_end)

    # -- flows -----------------------------------------------------------------------------

    def _recommendations(self, caller: OpenSpan, product: str) -> int:
        def handler(server: OpenSpan) -> int:
            key = f"recs:{self._user_id}:{product}"
            self._cache(server, "GET", key)
            hit = self.rng.random() < 0.65
            if not hit:
                span = self._internal(
                    server, "model.predict", 18.0, span_attr("model.name", "recsys-two-tower")
                )
                self._finish_child(server, span)
                self._cache(server, "SETEX", key)
            if self.rng.random() < (0.03 if self._incident else 0.004):
                self._log(
                    server,
                    ERR,
                    f"Inference timed out after 250 ms for user {self._user_id}; returning 503",
                )
                server.t += 250 * MS
                return 503
            n = 4 + int(self.rng.random() * 8)
            if self.rng.random() < 0.3:
                self._log(
                    server,
                    DEBUG,
                    f"Candidate generation for {self._user_id}: {n * 12} candidates, {n} after ranking (cache={'hit' if hit else 'miss'})",
                )
            self._log(
                server,
                INFO,
                f"Served {n} recommendations for user {self._user_id} (model=recsys-two-tower, cache={'hit' if hit else 'miss'})",
                log_attrs(("user.id", self._user_id), ("recs.count", n), ("cache.hit", hit)),
            )
            return 200

        status = self._call(
            caller,
            "recommendation",
            "GET",
            "/recommendations",
            f"/recommendations?product={product}",
            handler,
        )
        if status >= 500:
            self._log(
                caller,
                WARN,
                f"Recommendations unavailable (HTTP {status}), rendering page without them",
            )
        return status

    def _flow_home(self, root: OpenSpan) -> int:
        span = self._internal(root, "render home", 6.0, span_attr("template", "home.hbs"))
        self._finish_child(root, span)
        self._recommendations(root, "home")
        return 200

    def _gateway(
        self,
        caller: OpenSpan,
        method: str,
        route: str,
        path: str,
        handler: Callable[[OpenSpan], int],
    ) -> int:
        def proxy(gw: OpenSpan) -> int:
            status = handler(gw)
            if status >= 500:
                self._log(
                    gw,
                    ERR,
                    f"upstream error: {method} {path} -> {status} (request_id={self._hex(16)})",
                )
            elif self.rng.random() < 0.15:
                self._log(gw, DEBUG, f"proxy {method} {path} -> {status} route={route}")
            status = 502 if status in (500, 503) else status
            gw.t += self._ms(0.1)
            took = (gw.t - gw.start) / MS
            self._log(
                gw, INFO if status < 500 else WARN,
                f"{method} /api{path} {status} {took:.2f}ms upstream={self._user_id} bytes={int(self.rng.random() * 9000) + 120}",
                log_attrs(
                    ("http.method", method), ("http.route", "/api" + route), ("http.status_code", status),
                    ("duration_ms", round(took, 3)), ("user.id", self._user_id),
                ),
            )  # fmt: skip
            return status

        return self._call(caller, "api-gateway", method, "/api" + route, "/api" + path, proxy)

    def _verify_session(self, gw: OpenSpan) -> int:
        def handler(server: OpenSpan) -> int:
            self._cache(server, "GET", f"session:{self._hex(24)}")
            if self.rng.random() < 0.02:
                self._log(
                    server,
                    WARN,
                    f"Rejected session token for user {self._user_id}: token expired {int(self.rng.random() * 7200)}s ago",
                    log_attrs(("user.id", self._user_id), ("auth.reason", "expired")),
                )
                return 401
            if self.rng.random() < 0.4:
                self._log(
                    server, DEBUG,
                    f"Session verified for {self._user_id} (ttl {int(self.rng.random() * 86400)}s, scopes=cart,checkout)",
                    log_attrs(("user.id", self._user_id)),
                )  # fmt: skip
            return 200

        return self._call(gw, "auth", "POST", "/auth/verify", "/auth/verify", handler)

    def _flow_product(self, root: OpenSpan) -> int:
        sku = self._sku()

        def inventory(server: OpenSpan) -> int:
            db = self._db(
                server,
                "SELECT",
                "stock",
                "SELECT sku, quantity, warehouse_id FROM stock WHERE sku = $1",
                1.8,
            )
            if self.rng.random() < 0.002:
                server.t = db.t
                self._fail(
                    db,
                    "*pq.Error",
                    "pq: canceling statement due to statement timeout",
                    "pq: canceling statement due to statement timeout",
                )
                self._finish_child(server, db)
                self._log(
                    server,
                    ERR,
                    f"query stock for {sku} failed: pq: canceling statement due to statement timeout",
                    log_attrs(("sku", sku)),
                )
                return 500
            self._finish_child(server, db)
            qty = int(self.rng.random() ** 3 * 400)
            if qty < 5:
                self._log(
                    server,
                    WARN,
                    f"Low stock for {sku}: {qty} units left (threshold 5)",
                    log_attrs(("sku", sku), ("stock.quantity", qty)),
                )
            elif self.rng.random() < 0.3:
                self._log(
                    server,
                    DEBUG,
                    f"Stock for {sku}: {qty} units in WH-{1 + qty % 4}",
                    log_attrs(("sku", sku)),
                )
            return 200

        status = self._gateway(
            root,
            "GET",
            "/products/{id}",
            f"/products/{sku}",
            lambda gw: self._call(
                gw, "inventory", "GET", "/inventory/{sku}", f"/inventory/{sku}", inventory
            ),
        )
        self._recommendations(root, sku)
        return 500 if status >= 500 else status

    def _flow_add_to_cart(self, root: OpenSpan) -> int:
        sku, qty = self._sku(), 1 + int(self.rng.random() ** 3 * 4)

        def cart(server: OpenSpan) -> int:
            key = f"cart:{self._user_id}"
            self._cache(server, "HGETALL", key)
            self._cache(server, "HINCRBY", key)
            items = 1 + int(self.rng.random() * 9)
            self._log(
                server, INFO, f"Added {qty} x {sku} to cart of {self._user_id} ({items} items)",
                log_attrs(("user.id", self._user_id), ("sku", sku), ("cart.items", items)),
            )  # fmt: skip
            return 200

        def gw(span: OpenSpan) -> int:
            auth = self._verify_session(span)
            if auth != 200:
                return auth
            return self._call(
                span, "cart", "POST", "/cart/{userId}/items", f"/cart/{self._user_id}/items", cart
            )

        status = self._gateway(root, "POST", "/cart/items", "/cart/items", gw)
        return 500 if status >= 500 else status

    def _flow_login(self, root: OpenSpan) -> int:
        email = f"{self._user_id.replace('-', '')}@example.com"

        def login(server: OpenSpan) -> int:
            db = self._db(
                server,
                "SELECT",
                "users",
                "SELECT id, password_hash, locked FROM users WHERE email = $1",
                1.5,
            )
            self._finish_child(server, db)
            if self.rng.random() < 0.25:
                self._log(
                    server, DEBUG,
                    f"query took {(db.end - db.start) / MS:.3f}ms: SELECT id, password_hash, locked "
                    f"FROM users WHERE email = '{email}'",
                )  # fmt: skip
            span = self._internal(server, "bcrypt.verify", 70.0, span_attr("bcrypt.cost", 12))
            self._finish_child(server, span)
            if self.rng.random() < 0.06:
                attempt = 1 + int(self.rng.random() * 4)
                self._log(
                    server, WARN, f"Failed login for {email}: invalid password (attempt {attempt} of 5)",
                    log_attrs(("user.id", self._user_id), ("auth.reason", "invalid_password")),
                )  # fmt: skip
                return 401
            self._log(
                server,
                INFO,
                f"User {self._user_id} logged in from {self._client_ip}",
                log_attrs(("user.id", self._user_id)),
            )
            return 200

        status = self._gateway(
            root,
            "POST",
            "/login",
            "/login",
            lambda gw: self._call(gw, "auth", "POST", "/auth/login", "/auth/login", login),
        )
        return 500 if status >= 500 else status

    def _flow_search(self, root: OpenSpan) -> int:
        def search(server: OpenSpan) -> int:
            span = self._internal(server, "vector.search", 25.0, span_attr("index", "products-v7"))
            self._finish_child(server, span)
            hits = int(self.rng.random() * 120)
            self._log(
                server,
                DEBUG,
                f"search returned {hits} hits in {(span.end - span.start) / MS:.1f} ms",
                log_attrs(("search.hits", hits)),
            )
            return 200

        status = self._gateway(
            root,
            "GET",
            "/search",
            "/search",
            lambda gw: self._call(gw, "recommendation", "GET", "/search", "/search", search),
        )
        return 500 if status >= 500 else status

    # -- checkout: the long trace, and where the incident shows -----------------------------

    def _flow_checkout(self, root: OpenSpan) -> int:
        rng = self.rng
        order = f"ord_{self._hex(12)}"
        items = 1 + int(rng.random() ** 2 * 6)
        amount = round(5 + rng.random() ** 2 * 400, 2)

        def charge(server: OpenSpan) -> int:
            fraud = self._internal(server, "fraud.score", 4.0, span_attr("fraud.model", "gbm-v12"))
            self._finish_child(server, fraud)
            db = self._db(
                server,
                "SELECT",
                "payments",
                "SELECT id, status FROM payments WHERE order_id = ? FOR UPDATE",
                1.2,
            )
            self._finish_child(server, db)
            psp = self._open(server.pod, "client", "POST", CLIENT, server.t, server)
            psp.attrs += [
                span_attr("http.request.method", "POST"),
                span_attr("url.full", "https://psp.example.net/v1/charges"),
                span_attr("server.address", "psp.example.net"),
                span_attr("server.port", 443),
            ]
            psp.t += self._ms(180.0, 0.45)
            declined = rng.random() < 0.03
            psp.attrs.append(span_attr("http.response.status_code", 402 if declined else 200))
            if declined:
                psp.status = ERROR
            self._finish_child(server, psp)
            if declined:
                reason = DECLINE_REASONS[int(rng.random() * len(DECLINE_REASONS))]
                self._log(
                    server,
                    INFO,
                    f"Card declined for order {order}: {reason}",
                    log_attrs(("order.id", order), ("payment.decline_reason", reason)),
                )
                return 402
            deadlock = (
                bool(self.deadlock_slots) and server.t >= self.deadlock_slots[0] and self._incident
            )
            if deadlock:
                self.deadlock_slots.pop(0)
            lock_fail = self._incident and (
                deadlock or rng.random() < 0.6 or self.lock_timeouts == 0
            )
            if lock_fail and not deadlock:
                self.lock_timeouts += 1
            update = self._db(
                server, "UPDATE", "payments",
                "UPDATE payments SET status = 'captured', captured_at = now() WHERE id = ?",
                900.0 if self._incident else 2.0, 0.6 if self._incident else 0.5,
            )  # fmt: skip
            took_ms = (update.t - update.start) / MS
            if took_ms > 500:
                # Hibernate's slow-query log, written when the statement returns (or fails).
                server.t = update.t
                self._log(
                    server, WARN,
                    f"SlowQuery: {took_ms:.0f} milliseconds. SQL: 'UPDATE payments SET status = 'captured', "
                    f"captured_at = now() WHERE id = {int(rng.random() * 9e5) + 100000}'",
                    log_attrs(("db.statement.duration_ms", round(took_ms, 3)), ("order.id", order)),
                )  # fmt: skip
            if lock_fail:
                if deadlock:
                    message = "ERROR: deadlock detected"
                    stack = DEADLOCK_STACK
                    body = (
                        f"Deadlock detected while capturing payment for order {order}: process "
                        f"{int(rng.random() * 30000) + 1000} waits for ShareLock on transaction "
                        f"{int(rng.random() * 9e6) + 1e6:.0f}; blocked by process {int(rng.random() * 30000) + 1000}\n{stack}"
                    )
                else:
                    message = "ERROR: canceling statement due to lock timeout"
                    stack = LOCK_TIMEOUT_STACK
                    body = f"Failed to capture payment for order {order} (amount={amount} EUR)\n{stack}"
                server.t = update.t
                self._fail(update, "org.postgresql.util.PSQLException", message, stack)
                self._finish_child(server, update)
                self._fail(
                    server, "org.springframework.dao.CannotAcquireLockException", message, stack
                )
                self._log(
                    server,
                    ERR,
                    body,
                    log_attrs(
                        ("order.id", order),
                        ("payment.amount", amount),
                        ("error.type", "lock_timeout"),
                    ),
                )
                return 500
            self._finish_child(server, update)
            self._log(
                server, INFO, f"Captured payment pay_{self._hex(10)} for order {order}: {amount} EUR",
                log_attrs(("order.id", order), ("payment.amount", amount), ("payment.currency", "EUR")),
            )  # fmt: skip
            return 200

        def reserve(server: OpenSpan) -> int:
            db = self._db(
                server, "UPDATE", "stock",
                "UPDATE stock SET quantity = quantity - $1 WHERE sku = $2 AND quantity >= $1", 2.5,
            )  # fmt: skip
            self._finish_child(server, db)
            if rng.random() < 0.01:
                self._log(
                    server,
                    WARN,
                    f"Cannot reserve stock for order {order}: insufficient quantity",
                    log_attrs(("order.id", order)),
                )
                return 409
            if rng.random() < 0.3:
                self._log(
                    server,
                    DEBUG,
                    f"Reserved {items} items for order {order} in warehouse WH-{1 + int(rng.random() * 4)}",
                )
            return 200

        def quote(server: OpenSpan) -> int:
            span = self._internal(
                server, "rates.compute", 12.0, span_attr("carrier.count", len(CARRIERS))
            )
            self._finish_child(server, span)
            carrier, tier = CARRIERS[int(rng.random() * len(CARRIERS))]
            self._log(
                server, INFO,
                f"Quoted {carrier} {tier} for order {order}: {round(3 + rng.random() * 20, 2)} EUR, {1 + int(rng.random() * 5)} days",
                log_attrs(("order.id", order), ("shipping.carrier", carrier)),
            )  # fmt: skip
            return 200

        def email(producer: OpenSpan) -> None:
            pod = self.topo.pod("email", producer.end, rng)
            consumer = self._open(
                pod,
                "messaging",
                "order-events process",
                CONSUMER,
                producer.end + self._ms(40.0, 0.8),
                producer,
                True,
            )
            consumer.attrs += [
                span_attr("messaging.system", "kafka"),
                span_attr("messaging.destination.name", "order-events"),
                span_attr("messaging.operation.type", "process"),
                span_attr("messaging.consumer.group.name", "email-worker"),
            ]
            render = self._internal(consumer, "render order_confirmation", 8.0)
            self._finish_child(consumer, render)
            smtp = self._open(pod, "client", "smtp.send", CLIENT, consumer.t, consumer)
            smtp.attrs += [
                span_attr("server.address", "smtp.mailprovider.example"),
                span_attr("server.port", 587),
            ]
            smtp.t += self._ms(120.0, 0.5)
            self._finish_child(consumer, smtp)
            self._log(
                consumer,
                INFO,
                f"Sent order confirmation for {order} to {self._user_id[:3]}***@example.com",
                log_attrs(("order.id", order)),
            )
            self._close(consumer, 0.2)
            self._async_end = consumer.end

        def read_cart(server: OpenSpan) -> int:
            self._cache(server, "HGETALL", f"cart:{self._user_id}")
            return 200

        def checkout(server: OpenSpan) -> int:
            self._log(
                server, INFO, f"Placing order {order} for user {self._user_id}: {items} items, total {amount} EUR",
                log_attrs(("order.id", order), ("user.id", self._user_id), ("order.items", items), ("order.amount", amount)),
            )  # fmt: skip
            self._call(server, "cart", "GET", "/cart/{userId}", f"/cart/{self._user_id}", read_cart)
            if rng.random() < 0.002:
                self._fail(
                    server,
                    "java.lang.NullPointerException",
                    NPE_STACK.split("\n")[0].split(": ", 1)[1],
                    NPE_STACK,
                )
                self._log(
                    server,
                    ERR,
                    f"Unhandled exception while placing order {order}\n{NPE_STACK}",
                    log_attrs(("order.id", order)),
                )
                return 500
            if (
                self._call(
                    server, "inventory", "POST", "/inventory/reserve", "/inventory/reserve", reserve
                )
                == 409
            ):
                return 409
            for attempt in (1, 2):
                status = self._call(
                    server, "payment", "POST", "/payments/charge", "/payments/charge", charge
                )
                if status < 500:
                    break
                if attempt == 1:
                    self._log(
                        server,
                        WARN,
                        f"Payment for order {order} failed (HTTP {status}), retrying in 200 ms (attempt 1/2)",
                        log_attrs(("order.id", order)),
                    )
                    server.t += 200 * MS
            if status >= 500:
                self._log(
                    server,
                    ERR,
                    f"Order {order} failed: payment service unavailable after 2 attempts",
                    log_attrs(("order.id", order), ("error.type", "payment_unavailable")),
                )
                server.message = "payment service unavailable"
                return 502
            if status == 402:
                return 402
            self._call(server, "shipping", "POST", "/shipping/quote", "/shipping/quote", quote)
            producer = self._open(
                server.pod, "messaging", "order-events publish", PRODUCER, server.t, server
            )
            producer.attrs += [
                span_attr("messaging.system", "kafka"),
                span_attr("messaging.destination.name", "order-events"),
                span_attr("messaging.operation.type", "publish"),
                span_attr("messaging.destination.partition.id", str(int(rng.random() * 6))),
            ]
            producer.t += self._ms(3.0, 0.5)
            self._finish_child(server, producer)
            email(producer)
            self._log(
                server,
                INFO,
                f"Order {order} placed: {items} items, {amount} EUR",
                log_attrs(("order.id", order), ("order.amount", amount)),
            )
            return 200

        def gw(span: OpenSpan) -> int:
            auth = self._verify_session(span)
            if auth != 200:
                return auth
            return self._call(span, "checkout", "POST", "/checkout", "/checkout", checkout)

        status = self._gateway(root, "POST", "/checkout", "/checkout", gw)
        if status >= 500:
            self._log(
                root,
                ERR,
                f"Checkout failed for user {self._user_id}: upstream returned {status}",
                log_attrs(("user.id", self._user_id), ("order.id", order)),
            )
            return 500
        return status
