// SPDX-License-Identifier: Apache-2.0
// Readiness probe for the local Kafka broker started by scripts/broker.
// Usage: java -cp <kafka libs>:<this class dir> BrokerKafkaProbe HOST:PORT
// Exit 0 when the broker answers metadata requests, lists itself as a live
// node and its group coordinator answers (which also creates the consumer
// offsets topic, so the first consumer group of a test does not pay for it).
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

final class BrokerKafkaProbe {
  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: BrokerKafkaProbe HOST:PORT");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, "babelqueue-broker-probe");
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
    try (Admin admin = Admin.create(props)) {
      Collection<Node> nodes = admin.describeCluster().nodes().get(20, TimeUnit.SECONDS);
      if (nodes.isEmpty()) {
        System.err.println("kafka probe: no live brokers in the cluster metadata");
        System.exit(1);
      }
      admin.listTopics().names().get(20, TimeUnit.SECONDS);
      try {
        admin.describeConsumerGroups(List.of("babelqueue-broker-probe")).all().get(20, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof GroupIdNotFoundException)) {
          throw e;
        }
      }
      System.out.println("ok " + nodes.size() + " node(s)");
    } catch (Exception e) {
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      System.err.println("kafka probe: not ready: " + cause);
      System.exit(1);
    }
  }
}
