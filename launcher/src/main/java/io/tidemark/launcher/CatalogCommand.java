package io.tidemark.launcher;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

import org.apache.spark.sql.SparkSession;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.operations.CatalogRegistration;

/**
 * {@code tidemark catalog register|status|drop}: the lakehouse's tables and the analyst views in a
 * Hive metastore, for sessions without Tidemark's launcher, through {@link CatalogRegistration}.
 */
@Command(name = "catalog", mixinStandardHelpOptions = true,
        description = {"Register the tables and the analyst views in a Hive metastore, so spark-sql, the Thrift server and notebooks "
                + "see tidemark.kpi_5m, tidemark.kpi_daily etc. without Tidemark: an embedded Derby metastore in a directory "
                + "(one machine, one JVM at a time) or a metastore service (thrift://host:port). Setting catalog.metastore, or --metastore."},
        subcommands = {CatalogCommand.Register.class, CatalogCommand.Status.class, CatalogCommand.Drop.class})
final class CatalogCommand extends TidemarkCommand {

    @Override
    public Integer call() {
        throw new UserError("say register, status or drop (see 'tidemark catalog --help')");
    }

    abstract static class MetastoreCommand extends TidemarkCommand {
        @Option(names = "--metastore", paramLabel = "DIR|thrift://HOST:PORT",
                description = "The metastore: a directory (embedded Derby, created if need be) or thrift://host:port (setting catalog.metastore).")
        String metastore;

        /** Runs {@code body} in a Spark session on the metastore and prints its lines. */
        int run(String appName, BiFunction<CatalogRegistration, SparkSession, List<String>> body, boolean statusExit)
                throws Exception {
            Map<String, String> flags = new HashMap<>();
            flags.put(TidemarkConfig.Key.CATALOG_METASTORE.name, metastore);
            TidemarkConfig config = config(flags);
            TidemarkConfig.Metastore m = UserError.check(config::metastore);
            if (m instanceof TidemarkConfig.SparkDefault) {
                throw new UserError("no metastore: give --metastore DIR (an embedded Derby metastore) or --metastore thrift://host:port, "
                        + "or set catalog.metastore");
            }
            say("metastore %s; lakehouse %s", describe(m), config.lakehouseUri());
            SparkSession spark = UserError.check(() -> CatalogRegistration.session(config, appName));
            try {
                CatalogRegistration registration = new CatalogRegistration(config);
                List<String> lines = body.apply(registration, spark);
                lines.forEach(this::say);
                if (statusExit && !registration.complete(lines)) {
                    return ExitCode.INCOMPLETE.code();
                }
                return Tidemark.OK;
            } catch (CatalogRegistration.Refused e) {
                throw new UserError(e.getMessage(), e);
            } catch (Exception e) {
                // (Spark's AnalysisException, which wraps Hive's failures, is a checked exception that Scala throws undeclared.)
                if (m instanceof TidemarkConfig.DerbyDirectory && CatalogRegistration.derbyInUse(e)) {
                    throw new UserError(CatalogRegistration.IN_USE + " (" + ((TidemarkConfig.DerbyDirectory) m).dir() + ")", e);
                }
                throw e;
            } finally {
                spark.stop();
            }
        }

        static String describe(TidemarkConfig.Metastore m) {
            if (m instanceof TidemarkConfig.DerbyDirectory d) {
                return "embedded Derby in " + d.dir();
            }
            if (m instanceof TidemarkConfig.ThriftUris t) {
                return t.uris();
            }
            return "from Spark's configuration";
        }
    }

    @Command(name = "register", mixinStandardHelpOptions = true,
            description = {"Create database tidemark (located under the lakehouse), every table as an EXTERNAL Delta table at the "
                    + "lakehouse, and the analyst views as persistent views. Safe to re-run: registered tables stay, changed "
                    + "views are replaced.",
                    "A table registered at another location is refused (exit code 2, nothing changed) unless --replace is given."})
    static final class Register extends MetastoreCommand {
        @Option(names = "--replace", description = "Point tables registered at another location (another lakehouse) to this one.")
        boolean replace;

        @Override
        public Integer call() throws Exception {
            return run("tidemark-catalog-register", (r, spark) -> r.register(spark, replace), false);
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "What the metastore holds under Tidemark's names; exit code 6 unless every table is registered at this "
                    + "lakehouse and every view is current.")
    static final class Status extends MetastoreCommand {
        @Override
        public Integer call() throws Exception {
            return run("tidemark-catalog-status", (r, spark) -> r.status(spark), true);
        }
    }

    @Command(name = "drop", mixinStandardHelpOptions = true,
            description = "Remove Tidemark's views and tables from the metastore, then database tidemark if nothing else is in it. "
                    + "The Delta tables' files stay.")
    static final class Drop extends MetastoreCommand {
        @Override
        public Integer call() throws Exception {
            return run("tidemark-catalog-drop", (r, spark) -> r.drop(spark), false);
        }
    }
}
