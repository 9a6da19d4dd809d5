# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # globals are read by scripts/broker
# Apache ActiveMQ Artemis 2.x (the binary distribution from Maven Central, run
# with Java 17) as one broker instance on 127.0.0.1: an AMQP 1.0 port and an
# AMQPS port, nothing else listening.
# Sourced by scripts/broker.

# The broker's only user (anonymous connections are allowed as well and act
# as this user).
BQ_ARTEMIS_USER=admin
BQ_ARTEMIS_PASSWORD=admin
# Password of the PKCS#12 key and trust stores made from the test CA's files.
A_STORE_PASSWORD=babelqueue

bq_artemis_setup() {
  bq_port_default BQ_ARTEMIS_PORT 5692
  bq_port_default BQ_ARTEMIS_TLS_PORT 5693
  BQ_ARTEMIS_VERSION="${BQ_ARTEMIS_VERSION:-2.40.0}"
  BQ_ARTEMIS_HEAP="${BQ_ARTEMIS_HEAP:-512m}"
  bq_validate_port BQ_ARTEMIS_PORT "$BQ_ARTEMIS_PORT"
  if [[ "$BQ_ARTEMIS_TLS_PORT" != 0 ]]; then
    bq_validate_port BQ_ARTEMIS_TLS_PORT "$BQ_ARTEMIS_TLS_PORT"
    [[ "$BQ_ARTEMIS_TLS_PORT" != "$BQ_ARTEMIS_PORT" ]] || bq_die "BQ_ARTEMIS_TLS_PORT must differ from BQ_ARTEMIS_PORT"
  fi
  [[ "$BQ_ARTEMIS_VERSION" =~ ^2\.[0-9]+\.[0-9]+$ ]] || bq_die "BQ_ARTEMIS_VERSION must be a 2.x.y release (got '$BQ_ARTEMIS_VERSION')"
  [[ "$BQ_ARTEMIS_HEAP" =~ ^[0-9]+[mMgG]$ ]] || bq_die "BQ_ARTEMIS_HEAP must look like 512m or 1g (got '$BQ_ARTEMIS_HEAP')"
  A_DIR="$(bq_state_dir artemis)"
  # The paths end up in acceptor URLs (';' '?' '&' '=' separate parameters)
  # and in XML.
  [[ "$A_DIR" != *[\;\?\&=\<\>\"\']* ]] || bq_die "the Artemis state directory may not contain ; ? & = < > or quotes: $A_DIR"
  A_LOG="$A_DIR/artemis.log"
  A_PIDFILE="$A_DIR/artemis.pid"
  A_INSTANCE="$A_DIR/instance"
  A_TLS="$A_DIR/tls"
  A_HOME="$bq_cache_base/artemis-$BQ_ARTEMIS_VERSION"
  A_DIST="$A_HOME/apache-artemis-$BQ_ARTEMIS_VERSION"
  A_TIMEOUT="${BQ_START_TIMEOUT:-120}"
}

bq_artemis_logfile() { printf '%s\n' "$A_LOG"; }

bq_artemis_start_timeout() { printf '%s\n' "$A_TIMEOUT"; }

# The Python SDK's form; the credentials are accepted, and a client that
# leaves them out connects anonymously.
bq_artemis_url() {
  printf 'artemis://%s:%s@127.0.0.1:%s\n' "$BQ_ARTEMIS_USER" "$BQ_ARTEMIS_PASSWORD" "$BQ_ARTEMIS_PORT"
}

bq_artemis_tls_url() {
  [[ "$BQ_ARTEMIS_TLS_PORT" != 0 ]] || return 0
  printf 'artemis+ssl://%s:%s@127.0.0.1:%s\n' "$BQ_ARTEMIS_USER" "$BQ_ARTEMIS_PASSWORD" "$BQ_ARTEMIS_TLS_PORT"
}

bq_artemis_ports() {
  printf '%s\n' "$BQ_ARTEMIS_PORT"
  [[ "$BQ_ARTEMIS_TLS_PORT" == 0 ]] || printf '%s\n' "$BQ_ARTEMIS_TLS_PORT"
}

bq_artemis_install() {
  bq_ensure_java_maven "$A_DIR/install.log"
  command -v python3 >/dev/null 2>&1 || bq_apt_install "$A_DIR/install.log" python3
  local major
  major="$(bq_java_major)"
  if [[ -z "$major" ]] || (( major < 17 )); then
    bq_die "Artemis $BQ_ARTEMIS_VERSION needs Java 17 or newer (found '${major:-none}')"
  fi
  bq_lock "$bq_cache_base/.artemis-$BQ_ARTEMIS_VERSION.lock" 8
  # The binary distribution is one tar.gz artifact; the exclusion keeps Maven
  # from copying the jars its POM lists (the tarball holds them all).
  bq_mvn_fetch "$A_HOME" "$A_DIR/install.log" "    <dependency>
      <groupId>org.apache.activemq</groupId>
      <artifactId>apache-artemis</artifactId>
      <version>$BQ_ARTEMIS_VERSION</version>
      <classifier>bin</classifier>
      <type>tar.gz</type>
      <exclusions>
        <exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>
      </exclusions>
    </dependency>"
  if [[ ! -f "$A_DIST/.complete" ]]; then
    local tarball="$A_HOME/libs/apache-artemis-$BQ_ARTEMIS_VERSION-bin.tar.gz" work="$A_HOME/.unpack.$$"
    [[ -f "$tarball" ]] || bq_die "Maven did not deliver $tarball"
    rm -rf "$work" "$A_DIST"
    mkdir -p "$work"
    tar -xzf "$tarball" -C "$work" >>"$A_DIR/install.log" 2>&1 ||
      { rm -rf "$work"; bq_die "could not unpack $tarball"; }
    [[ -x "$work/apache-artemis-$BQ_ARTEMIS_VERSION/bin/artemis" ]] ||
      { rm -rf "$work"; bq_die "$tarball holds no apache-artemis-$BQ_ARTEMIS_VERSION/bin/artemis"; }
    mv "$work/apache-artemis-$BQ_ARTEMIS_VERSION" "$A_DIST"
    rm -rf "$work"
    date -u +%Y-%m-%dT%H:%M:%SZ >"$A_DIST/.complete"
    bq_log "unpacked Artemis $BQ_ARTEMIS_VERSION into $A_DIST"
  fi
  exec 8>&-
}

bq_artemis_pid() { bq_pidfile_pid "$A_PIDFILE" "$A_DIR"; }

# The last start's part of the log says the server is active.
bq_artemis_log_active() {
  [[ -f "$A_LOG" ]] || return 1
  awk '/^===== .* starting: / { active = 0 } /AMQ221007/ { active = 1 } END { exit !active }' "$A_LOG"
}

# Ready: the log says AMQ221007 (server active), and a real AMQP 1.0
# connection (SASL PLAIN with the URL's user, then open) is answered on the
# plain port and, verified against the test CA, on the TLS port.
bq_artemis_probe() {
  bq_port_open "$BQ_ARTEMIS_PORT" || return 1
  bq_artemis_log_active || return 1
  local probe=(python3 "$BQ_LIB_DIR/broker-artemis-probe.py")
  "${probe[@]}" 127.0.0.1 "$BQ_ARTEMIS_PORT" --user "$BQ_ARTEMIS_USER" --password "$BQ_ARTEMIS_PASSWORD" \
    >/dev/null 2>&1 || return 1
  if [[ "$BQ_ARTEMIS_TLS_PORT" != 0 ]]; then
    "${probe[@]}" 127.0.0.1 "$BQ_ARTEMIS_TLS_PORT" --ca "$A_TLS/ca.crt" >/dev/null 2>&1 || return 1
  fi
}

# The instance (bin/artemis, etc/artemis.profile, users, roles, login.config,
# logging) is made once by `artemis create`; broker.xml is rewritten on every
# start.
bq_artemis_create_instance() {
  [[ -f "$A_INSTANCE/.created" && "$(cat "$A_INSTANCE/.created")" == "$BQ_ARTEMIS_VERSION" ]] && return 0
  bq_log "creating the Artemis instance in $A_INSTANCE"
  if ! (cd "$A_DIR" && "$A_DIST/bin/artemis" create "$A_INSTANCE" --host 127.0.0.1 --no-web \
          --no-stomp-acceptor --no-mqtt-acceptor --no-hornetq-acceptor --allow-anonymous \
          --user "$BQ_ARTEMIS_USER" --password "$BQ_ARTEMIS_PASSWORD" --java-memory 512M \
          --nio --no-autotune --silent --force >>"$A_DIR/install.log" 2>&1); then
    tail -n 30 "$A_DIR/install.log" >&2 || true
    bq_die "artemis create failed"
  fi
  printf '%s\n' "$BQ_ARTEMIS_VERSION" >"$A_INSTANCE/.created"
}

# PKCS#12 stores for the TLS acceptor, made from the shared test CA's PEM
# files (bq_gen_tls): the server's key and chain, and the CA as the trust
# anchor for client certificates.
bq_artemis_write_stores() {
  bq_gen_tls "$A_TLS"
  if [[ ! -s "$A_TLS/server.p12" || "$A_TLS/server.crt" -nt "$A_TLS/server.p12" ]]; then
    rm -f "$A_TLS/server.p12" "$A_TLS/truststore.p12"
    if ! { openssl pkcs12 -export -name server -in "$A_TLS/server.crt" -inkey "$A_TLS/server.key" \
             -certfile "$A_TLS/ca.crt" -passout "pass:$A_STORE_PASSWORD" -out "$A_TLS/server.p12" &&
           keytool -importcert -noprompt -storetype PKCS12 -alias babelqueue-test-ca \
             -file "$A_TLS/ca.crt" -keystore "$A_TLS/truststore.p12" \
             -storepass "$A_STORE_PASSWORD"; } >>"$A_DIR/install.log" 2>&1; then
      rm -f "$A_TLS/server.p12" "$A_TLS/truststore.p12"
      tail -n 20 "$A_DIR/install.log" >&2 || true
      bq_die "could not make the PKCS#12 stores in $A_TLS"
    fi
    chmod 600 "$A_TLS/server.p12"
  fi
}

bq_artemis_write_conf() {
  local amqp_params="tcpSendBufferSize=1048576;tcpReceiveBufferSize=1048576;useEpoll=true;amqpCredits=1000;amqpLowCredits=300;amqpMinLargeMessageSize=102400;amqpDuplicateDetection=true"
  local tls_acceptor=""
  if [[ "$BQ_ARTEMIS_TLS_PORT" != 0 ]]; then
    tls_acceptor="
         <!-- AMQPS: the server certificate is signed by the test CA (tls/ca.crt); a client
              certificate is optional, but must be signed by that CA when presented. -->
         <acceptor name=\"amqps\">tcp://127.0.0.1:$BQ_ARTEMIS_TLS_PORT?protocols=AMQP;$amqp_params;sslEnabled=true;keyStoreType=PKCS12;keyStorePath=$A_TLS/server.p12;keyStorePassword=$A_STORE_PASSWORD;trustStoreType=PKCS12;trustStorePath=$A_TLS/truststore.p12;trustStorePassword=$A_STORE_PASSWORD;wantClientAuth=true</acceptor>"
  fi
  cat >"$A_INSTANCE/etc/broker.xml" <<EOF
<?xml version="1.0"?>
<!-- generated by scripts/broker; rewritten on every start -->
<configuration xmlns="urn:activemq" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
               xsi:schemaLocation="urn:activemq /schema/artemis-configuration.xsd">
   <core xmlns="urn:activemq:core">
      <name>babelqueue</name>
      <persistence-enabled>true</persistence-enabled>
      <journal-type>NIO</journal-type>
      <journal-datasync>true</journal-datasync>
      <journal-min-files>2</journal-min-files>
      <journal-pool-files>10</journal-pool-files>
      <journal-file-size>10M</journal-file-size>
      <max-redelivery-records>1</max-redelivery-records>
      <paging-directory>$A_INSTANCE/data/paging</paging-directory>
      <bindings-directory>$A_INSTANCE/data/bindings</bindings-directory>
      <journal-directory>$A_INSTANCE/data/journal</journal-directory>
      <large-messages-directory>$A_INSTANCE/data/large-messages</large-messages-directory>

      <!-- A nearly full disk would make the broker block producers without an error;
           a test broker should rather fail where the write fails. -->
      <max-disk-usage>-1</max-disk-usage>
      <!-- On a loaded machine a slow fsync must not halt the broker: log instead. -->
      <critical-analyzer>true</critical-analyzer>
      <critical-analyzer-timeout>120000</critical-analyzer-timeout>
      <critical-analyzer-check-period>60000</critical-analyzer-check-period>
      <critical-analyzer-policy>LOG</critical-analyzer-policy>
      <global-max-messages>-1</global-max-messages>

      <acceptors>
         <!-- AMQP 1.0 for the SDKs; CORE on the same port only for the artemis CLI
              (queue stat, browse, purge). No other port is opened. -->
         <acceptor name="amqp">tcp://127.0.0.1:$BQ_ARTEMIS_PORT?protocols=AMQP,CORE;$amqp_params</acceptor>$tls_acceptor
      </acceptors>

      <security-settings>
         <security-setting match="#">
            <permission type="createNonDurableQueue" roles="amq"/>
            <permission type="deleteNonDurableQueue" roles="amq"/>
            <permission type="createDurableQueue" roles="amq"/>
            <permission type="deleteDurableQueue" roles="amq"/>
            <permission type="createAddress" roles="amq"/>
            <permission type="deleteAddress" roles="amq"/>
            <permission type="consume" roles="amq"/>
            <permission type="browse" roles="amq"/>
            <permission type="send" roles="amq"/>
            <permission type="manage" roles="amq"/>
         </security-setting>
      </security-settings>

      <address-settings>
         <address-setting match="activemq.management#">
            <dead-letter-address>DLQ</dead-letter-address>
            <expiry-address>ExpiryQueue</expiry-address>
            <redelivery-delay>0</redelivery-delay>
            <max-size-bytes>-1</max-size-bytes>
            <message-counter-history-day-limit>10</message-counter-history-day-limit>
            <address-full-policy>PAGE</address-full-policy>
            <auto-create-queues>true</auto-create-queues>
            <auto-create-addresses>true</auto-create-addresses>
         </address-setting>
         <address-setting match="#">
            <!-- An address created by a plain attach (no terminus capability, as the
                 Python SDK does it) is ANYCAST, one queue of the same name: a message
                 sent before any receiver exists waits there instead of being dropped,
                 as it is on the MULTICAST default. -->
            <default-address-routing-type>ANYCAST</default-address-routing-type>
            <default-queue-routing-type>ANYCAST</default-queue-routing-type>
            <auto-create-queues>true</auto-create-queues>
            <auto-create-addresses>true</auto-create-addresses>
            <auto-delete-queues>false</auto-delete-queues>
            <auto-delete-addresses>false</auto-delete-addresses>
            <!-- Artemis's own dead-lettering (its defaults, spelled out): after 10 failed
                 deliveries the message moves to the address DLQ. Only a delivery settled
                 as modified with delivery-failed=true counts as failed; released, modified
                 without it, and an unsettled delivery on a closed connection do not. -->
            <max-delivery-attempts>10</max-delivery-attempts>
            <dead-letter-address>DLQ</dead-letter-address>
            <auto-create-dead-letter-resources>false</auto-create-dead-letter-resources>
            <expiry-address>ExpiryQueue</expiry-address>
            <redelivery-delay>0</redelivery-delay>
            <message-counter-history-day-limit>10</message-counter-history-day-limit>
            <address-full-policy>PAGE</address-full-policy>
            <page-size-bytes>10M</page-size-bytes>
            <max-size-bytes>-1</max-size-bytes>
            <max-size-messages>-1</max-size-messages>
            <max-read-page-messages>-1</max-read-page-messages>
            <max-read-page-bytes>20M</max-read-page-bytes>
            <page-limit-bytes>-1</page-limit-bytes>
            <page-limit-messages>-1</page-limit-messages>
         </address-setting>
      </address-settings>

      <addresses>
         <address name="DLQ">
            <anycast><queue name="DLQ"/></anycast>
         </address>
         <address name="ExpiryQueue">
            <anycast><queue name="ExpiryQueue"/></anycast>
         </address>
      </addresses>
   </core>
</configuration>
EOF
}

# Who may connect: the user of artemis-users.properties with its password, or
# a client without credentials (SASL ANONYMOUS), as that user. Wrong
# credentials are refused: credentialsInvalidate keeps the guest module from
# accepting a client that sent a password (by default it would).
bq_artemis_write_login() {
  cat >"$A_INSTANCE/etc/login.config" <<EOF
/* generated by scripts/broker; rewritten on every start */
activemq {
   org.apache.activemq.artemis.spi.core.security.jaas.PropertiesLoginModule sufficient
       debug=false
       reload=true
       org.apache.activemq.jaas.properties.user="artemis-users.properties"
       org.apache.activemq.jaas.properties.role="artemis-roles.properties";

   org.apache.activemq.artemis.spi.core.security.jaas.GuestLoginModule sufficient
       debug=false
       org.apache.activemq.jaas.guest.user="$BQ_ARTEMIS_USER"
       org.apache.activemq.jaas.guest.role="amq"
       credentialsInvalidate=true;
};
EOF
}

bq_artemis_launch() {
  bq_artemis_create_instance
  [[ "$BQ_ARTEMIS_TLS_PORT" == 0 ]] || bq_artemis_write_stores
  bq_artemis_write_conf
  bq_artemis_write_login
  # JAVA_ARGS replaces the profile's (which would reserve the whole heap up
  # front with -Xms and configure the web console this instance does not run).
  local java_args=(
    "-Xms64m" "-Xmx$BQ_ARTEMIS_HEAP" -XX:+UseG1GC -XX:+UseStringDeduplication -XX:AutoBoxCacheMax=20000
    -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true -Dlog4j2.disableJmx=true
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
  )
  bq_spawn "$A_DIR" "$A_PIDFILE" "$A_LOG" env "JAVA_ARGS=${java_args[*]}" "$A_INSTANCE/bin/artemis" run
}

bq_artemis_loopback_pids() {
  local pid
  pid="$(bq_artemis_pid)" || return 0
  bq_session_pids "$pid"
}

bq_artemis_stop() {
  local pid
  pid="$(bq_artemis_pid)" || return 0
  # SIGTERM runs Artemis's shutdown hook, which stops the server cleanly.
  bq_terminate artemis "$pid" "$BQ_STOP_TIMEOUT"
  rm -f "$A_PIDFILE"
}

bq_artemis_info() {
  echo "url=$(bq_artemis_url)"
  if [[ "$BQ_ARTEMIS_TLS_PORT" != 0 ]]; then
    echo "tls_url=$(bq_artemis_tls_url)"
    echo "tls_ca=$A_TLS/ca.crt"
    echo "tls_cert=$A_TLS/client.crt"
    echo "tls_key=$A_TLS/client.key"
  fi
  echo "port=$BQ_ARTEMIS_PORT"
  echo "tls_port=$BQ_ARTEMIS_TLS_PORT"
  echo "user=$BQ_ARTEMIS_USER"
  echo "password=$BQ_ARTEMIS_PASSWORD"
  echo "dead_letter_address=DLQ"
  echo "max_delivery_attempts=10"
  echo "version=$BQ_ARTEMIS_VERSION"
  echo "instance=$A_INSTANCE"
  echo "dir=$A_DIR"
  echo "log=$A_LOG"
  echo "artemis=$A_INSTANCE/bin/artemis"
  echo "cli_url=tcp://127.0.0.1:$BQ_ARTEMIS_PORT"
}
