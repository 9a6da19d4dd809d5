# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # globals are read by scripts/broker
# Apache Pulsar 4.x standalone (jars from Maven Central, run with Java 17) on
# 127.0.0.1: the binary protocol on a plain and a TLS port, the admin HTTP
# port, and the in-process bookie's port; no functions worker, no stream
# storage. Besides its internal listener, the broker advertises a second one,
# `fault`, at a port where the robustness harness's fault proxy listens: a
# client that looks topics up with listener_name=fault keeps going through
# the proxy (docs/reliability.md). Nothing listens there otherwise.
# The data is wiped on every start.
# Sourced by scripts/broker.

bq_pulsar_setup() {
  bq_port_default BQ_PULSAR_PORT 6650
  bq_port_default BQ_PULSAR_TLS_PORT 6651
  bq_port_default BQ_PULSAR_HTTP_PORT 8095
  bq_port_default BQ_PULSAR_BOOKIE_PORT 3191
  BQ_PULSAR_FAULT_PROXY_PORT="${BQ_PULSAR_FAULT_PROXY_PORT:-$(( BQ_PULSAR_PORT + 2 ))}"
  BQ_PULSAR_VERSION="${BQ_PULSAR_VERSION:-4.2.4}"
  BQ_PULSAR_AUTH="${BQ_PULSAR_AUTH:-}"
  [[ -z "$BQ_PULSAR_AUTH" || "$BQ_PULSAR_AUTH" == token ]] ||
    bq_die "BQ_PULSAR_AUTH must be empty or token (got '$BQ_PULSAR_AUTH')"
  BQ_PULSAR_HEAP="${BQ_PULSAR_HEAP:-512m}"
  BQ_PULSAR_DIRECT_MEMORY="${BQ_PULSAR_DIRECT_MEMORY:-512m}"
  bq_validate_port BQ_PULSAR_PORT "$BQ_PULSAR_PORT"
  bq_validate_port BQ_PULSAR_HTTP_PORT "$BQ_PULSAR_HTTP_PORT"
  bq_validate_port BQ_PULSAR_BOOKIE_PORT "$BQ_PULSAR_BOOKIE_PORT"
  bq_validate_port BQ_PULSAR_FAULT_PROXY_PORT "$BQ_PULSAR_FAULT_PROXY_PORT"
  if [[ "$BQ_PULSAR_TLS_PORT" != 0 ]]; then
    bq_validate_port BQ_PULSAR_TLS_PORT "$BQ_PULSAR_TLS_PORT"
  fi
  local ports
  ports="$(printf '%s\n' "$BQ_PULSAR_PORT" "$BQ_PULSAR_HTTP_PORT" "$BQ_PULSAR_BOOKIE_PORT" "$BQ_PULSAR_TLS_PORT" \
    "$BQ_PULSAR_FAULT_PROXY_PORT" | grep -v '^0$')"
  [[ "$(sort -u <<<"$ports" | wc -l)" == "$(wc -l <<<"$ports")" ]] ||
    bq_die "BQ_PULSAR_PORT, BQ_PULSAR_TLS_PORT, BQ_PULSAR_HTTP_PORT, BQ_PULSAR_BOOKIE_PORT and BQ_PULSAR_FAULT_PROXY_PORT must differ"
  [[ "$BQ_PULSAR_VERSION" =~ ^[34]\.[0-9]+\.[0-9]+$ ]] ||
    bq_die "BQ_PULSAR_VERSION must be a 3.x.y or 4.x.y release (got '$BQ_PULSAR_VERSION')"
  [[ "$BQ_PULSAR_HEAP" =~ ^[0-9]+[mMgG]$ ]] || bq_die "BQ_PULSAR_HEAP must look like 512m or 1g (got '$BQ_PULSAR_HEAP')"
  [[ "$BQ_PULSAR_DIRECT_MEMORY" =~ ^[0-9]+[mMgG]$ ]] ||
    bq_die "BQ_PULSAR_DIRECT_MEMORY must look like 512m or 1g (got '$BQ_PULSAR_DIRECT_MEMORY')"
  P_DIR="$(bq_state_dir pulsar)"
  P_LOG="$P_DIR/pulsar.log"
  P_PIDFILE="$P_DIR/pulsar.pid"
  P_TLS="$P_DIR/tls"
  P_AUTH="$P_DIR/auth"
  P_HOME="$bq_cache_base/pulsar-$BQ_PULSAR_VERSION"
  # 10 s on an idle machine, up to about 65 s while builds keep both cores busy.
  P_TIMEOUT="${BQ_START_TIMEOUT:-180}"
}

bq_pulsar_logfile() { printf '%s\n' "$P_LOG"; }

bq_pulsar_start_timeout() { printf '%s\n' "$P_TIMEOUT"; }

bq_pulsar_url() { printf 'pulsar://127.0.0.1:%s\n' "$BQ_PULSAR_PORT"; }

bq_pulsar_tls_url() {
  [[ "$BQ_PULSAR_TLS_PORT" != 0 ]] || return 0
  printf 'pulsar+ssl://127.0.0.1:%s\n' "$BQ_PULSAR_TLS_PORT"
}

bq_pulsar_ports() {
  printf '%s\n' "$BQ_PULSAR_PORT" "$BQ_PULSAR_HTTP_PORT" "$BQ_PULSAR_BOOKIE_PORT"
  [[ "$BQ_PULSAR_TLS_PORT" == 0 ]] || printf '%s\n' "$BQ_PULSAR_TLS_PORT"
}

bq_pulsar_install() {
  bq_ensure_java_maven "$P_DIR/install.log"
  bq_ensure_curl "$P_DIR/install.log"
  local major
  major="$(bq_java_major)"
  if [[ -z "$major" ]] || (( major < 17 )); then
    bq_die "Pulsar $BQ_PULSAR_VERSION needs Java 17 or newer (found '${major:-none}')"
  fi
  bq_lock "$bq_cache_base/.pulsar-$BQ_PULSAR_VERSION.lock" 8
  # Maven Central has no server distribution: the broker and websocket
  # modules (the standalone starter needs both) with their runtime
  # dependencies, versions fixed by Pulsar's parent POM imported as a BOM,
  # plus a Log4j 2 backend for SLF4J 2.
  bq_mvn_fetch "$P_HOME" "$P_DIR/install.log" "    <dependency>
      <groupId>org.apache.pulsar</groupId>
      <artifactId>pulsar-broker</artifactId>
      <version>$BQ_PULSAR_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.pulsar</groupId>
      <artifactId>pulsar-websocket</artifactId>
      <version>$BQ_PULSAR_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j2-impl</artifactId>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
    </dependency>" "      <dependency>
        <groupId>org.apache.pulsar</groupId>
        <artifactId>pulsar</artifactId>
        <version>$BQ_PULSAR_VERSION</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>"
  exec 8>&-
}

bq_pulsar_pid() { bq_pidfile_pid "$P_PIDFILE" "$P_DIR"; }

# Ready: the broker's own health check (it produces and consumes on its
# heartbeat topic) answers ok, and the namespace public/default, which the
# standalone starter creates after the broker is up, exists.
bq_pulsar_probe() {
  bq_port_open "$BQ_PULSAR_PORT" || return 1
  local base="http://127.0.0.1:$BQ_PULSAR_HTTP_PORT/admin/v2" curl=(curl -s --max-time 10)
  if [[ "$BQ_PULSAR_AUTH" == token ]]; then
    curl+=(-H "Authorization: Bearer $(cat "$P_AUTH/admin.token" 2>/dev/null)")
  fi
  [[ "$("${curl[@]}" "$base/brokers/health" 2>/dev/null)" == ok ]] || return 1
  "${curl[@]}" "$base/namespaces/public" 2>/dev/null | grep -q '"public/default"' || return 1
  if [[ "$BQ_PULSAR_TLS_PORT" != 0 ]]; then
    timeout 10 openssl s_client -connect "127.0.0.1:$BQ_PULSAR_TLS_PORT" -CAfile "$P_TLS/ca.crt" \
      -verify_return_error -brief </dev/null >/dev/null 2>&1 || return 1
  fi
}

# Token authentication (BQ_PULSAR_AUTH=token): a secret key (HS256) made
# once, and a token for the role admin signed with it (a JWT whose subject is
# admin), for the tests and the broker's own client.
bq_pulsar_write_auth() {
  [[ -s "$P_AUTH/secret.key" && -s "$P_AUTH/admin.token" ]] && return 0
  mkdir -p "$P_AUTH"
  python3 - "$P_AUTH" <<'PY' || bq_die "could not make the Pulsar token files in $P_AUTH"
import base64, hashlib, hmac, json, os, sys
directory = sys.argv[1]
key = os.urandom(32)
def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")
header = b64(json.dumps({"alg": "HS256"}, separators=(",", ":")).encode())
payload = b64(json.dumps({"sub": "admin"}, separators=(",", ":")).encode())
signature = b64(hmac.new(key, header + b"." + payload, hashlib.sha256).digest())
old = os.umask(0o077)
with open(os.path.join(directory, "secret.key"), "wb") as f:
    f.write(key)
with open(os.path.join(directory, "admin.token"), "w") as f:
    f.write((header + b"." + payload + b"." + signature).decode())
os.umask(old)
PY
}

bq_pulsar_write_conf() {
  local tls_conf="" auth_conf="authenticationEnabled=false" internal_tls=""
  [[ "$BQ_PULSAR_TLS_PORT" == 0 ]] || internal_tls=",internal:pulsar+ssl://127.0.0.1:$BQ_PULSAR_TLS_PORT"
  if [[ "$BQ_PULSAR_AUTH" == token ]]; then
    auth_conf="authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken
tokenSecretKey=file://$P_AUTH/secret.key
superUserRoles=admin
brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
brokerClientAuthenticationParameters=file://$P_AUTH/admin.token"
  fi
  if [[ "$BQ_PULSAR_TLS_PORT" != 0 ]]; then
    tls_conf="brokerServicePortTls=$BQ_PULSAR_TLS_PORT
tlsCertificateFilePath=$P_TLS/server.crt
tlsKeyFilePath=$P_TLS/server.key
tlsTrustCertsFilePath=$P_TLS/ca.crt
tlsAllowInsecureConnection=false
tlsRequireTrustedClientCertOnConnect=false"
  fi
  cat >"$P_DIR/standalone.conf" <<EOF
# generated by scripts/broker; rewritten on every start
clusterName=standalone
# The broker: every listener on 127.0.0.1, advertised as 127.0.0.1.
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
brokerServicePort=$BQ_PULSAR_PORT
# Lookups answer with the internal listener, unless the client names
# another: fault advertises the fault proxy's port (nothing binds it here).
advertisedListeners=internal:pulsar://127.0.0.1:$BQ_PULSAR_PORT$internal_tls,fault:pulsar://127.0.0.1:$BQ_PULSAR_FAULT_PROXY_PORT
internalListenerName=internal
webServicePort=$BQ_PULSAR_HTTP_PORT
$tls_conf
# The in-process bookie reads this file too: without these it binds 0.0.0.0.
# With allowEphemeralPorts it takes --bookkeeper-port (without, a free port
# of the starter's choosing; bookiePort here is not read).
allowEphemeralPorts=true
listeningInterface=lo
allowLoopback=true
httpServerEnabled=false
advertisedAddress=127.0.0.1
# The broker's own client (replicator, system topics) resolves names through
# a UDP socket that would be bound to 0.0.0.0.
brokerClient_dnsLookupBindAddress=127.0.0.1
# One bookie: ensemble, write and ack quorum of 1.
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
# Topics and subscriptions appear on first use and stay.
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
allowAutoSubscriptionCreation=true
brokerDeleteInactiveTopicsEnabled=false
# deliverAt/deliverAfter (Shared subscriptions only), never early: by default
# a broker may deliver up to one tick before the time.
delayedDeliveryEnabled=true
delayedDeliveryTickTimeMillis=100
isDelayedDeliveryDeliverAtTimeStrict=true
# No authentication unless BQ_PULSAR_AUTH=token; no authorization.
$auth_conf
authorizationEnabled=false
functionsWorkerEnabled=false
webSocketServiceEnabled=false
systemTopicEnabled=true
topicLevelPoliciesEnabled=true
transactionCoordinatorEnabled=false
# A small machine: few threads, no load balancing work.
numIOThreads=2
numHttpServerThreads=4
numOrderedExecutorThreads=2
numExecutorThreadPoolSize=2
loadBalancerEnabled=false
exposeTopicLevelMetricsInPrometheus=false
# Bookie storage sized for tests.
journalMaxSizeMB=256
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
dbStorage_rocksDB_blockCacheSize=16777216
managedLedgerCacheSizeMB=64
EOF
  cat >"$P_DIR/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by scripts/broker: Pulsar logs to stdout, which goes to pulsar.log -->
<Configuration status="WARN">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1} - %m%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="STDOUT"/></Root>
    <Logger name="org.apache.zookeeper" level="WARN"/>
    <Logger name="org.apache.bookkeeper" level="WARN"/>
    <Logger name="org.apache.distributedlog" level="WARN"/>
    <Logger name="org.eclipse.jetty" level="WARN"/>
    <Logger name="org.apache.pulsar.broker.admin" level="WARN"/>
    <Logger name="org.apache.pulsar.broker.web" level="WARN"/>
  </Loggers>
</Configuration>
EOF
}

bq_pulsar_launch() {
  [[ "$BQ_PULSAR_TLS_PORT" == 0 ]] || bq_gen_tls "$P_TLS"
  [[ "$BQ_PULSAR_AUTH" != token ]] || bq_pulsar_write_auth
  bq_pulsar_write_conf
  # A test broker starts empty: topics, subscriptions and metadata of an
  # earlier run would make tests depend on each other. The starter keeps its
  # metadata and the bookie's ledgers under data/ of its working directory.
  # BQ_PULSAR_KEEP_DATA=1 keeps them (a restart in the middle of a test).
  if [[ "${BQ_PULSAR_KEEP_DATA:-0}" != 1 ]]; then
    rm -rf "$P_DIR/data"
  fi
  local java=(
    java "-Xms128m" "-Xmx$BQ_PULSAR_HEAP" "-XX:MaxDirectMemorySize=$BQ_PULSAR_DIRECT_MEMORY"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError
    -XX:ActiveProcessorCount=2 -Djava.net.preferIPv4Stack=true -Djava.awt.headless=true
    # What Pulsar's own launcher opens for Netty, BookKeeper and the metrics.
    --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED
    --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/jdk.internal.platform=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true
    -Dpulsar.allocator.exit_on_oom=true -Dio.netty.recycler.maxCapacityPerThread=4096
    "-Dlog4j2.configurationFile=$P_DIR/log4j2.xml" -Dlog4j2.disableJmx=true
    "-Dpulsar.log.dir=$P_DIR" -cp "$P_HOME/libs/*"
    org.apache.pulsar.PulsarStandaloneStarter --config "$P_DIR/standalone.conf" -nfw -nss
    --bookkeeper-port "$BQ_PULSAR_BOOKIE_PORT" --advertised-address 127.0.0.1
  )
  bq_spawn "$P_DIR" "$P_PIDFILE" "$P_LOG" "${java[@]}"
}

bq_pulsar_loopback_pids() {
  local pid
  pid="$(bq_pulsar_pid)" || return 0
  bq_session_pids "$pid"
}

bq_pulsar_stop() {
  local pid
  pid="$(bq_pulsar_pid)" || return 0
  bq_terminate pulsar "$pid" "$BQ_STOP_TIMEOUT"
  rm -f "$P_PIDFILE"
}

bq_pulsar_info() {
  echo "url=$(bq_pulsar_url)"
  if [[ "$BQ_PULSAR_TLS_PORT" != 0 ]]; then
    echo "tls_url=$(bq_pulsar_tls_url)"
    echo "tls_ca=$P_TLS/ca.crt"
    echo "tls_cert=$P_TLS/client.crt"
    echo "tls_key=$P_TLS/client.key"
  fi
  if [[ "$BQ_PULSAR_AUTH" == token ]]; then
    echo "auth=token"
    echo "token_file=$P_AUTH/admin.token"
  fi
  echo "port=$BQ_PULSAR_PORT"
  echo "tls_port=$BQ_PULSAR_TLS_PORT"
  echo "http_port=$BQ_PULSAR_HTTP_PORT"
  echo "bookie_port=$BQ_PULSAR_BOOKIE_PORT"
  echo "fault_listener_name=fault"
  echo "fault_proxy_port=$BQ_PULSAR_FAULT_PROXY_PORT"
  echo "admin_url=http://127.0.0.1:$BQ_PULSAR_HTTP_PORT"
  echo "version=$BQ_PULSAR_VERSION"
  echo "classpath=$P_HOME/libs/*"
  echo "dir=$P_DIR"
  echo "log=$P_LOG"
}
