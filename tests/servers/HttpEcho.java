// HttpEcho - a JDK HTTP server for tests/runtimes: GET /N answers "ok N\n".
// It listens on 127.0.0.1 at an ephemeral port and writes that port, once
// bound, to the file named by its first argument.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.Executors;

public class HttpEcho {
	public static void main(String[] args) throws Exception {
		HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
		s.createContext("/", ex -> {
			String path = ex.getRequestURI().getPath();
			StringBuilder sb = new StringBuilder("ok ").append(path.substring(1)).append('\n');
			// Some allocation and string work per request, so that the JIT
			// compiles and the collector runs while needle attaches.
			for (int i = 0; i < 50; i++)
				sb.append(Integer.toHexString(path.hashCode() * i).length() > 99 ? "x" : "");
			byte[] body = sb.toString().getBytes(StandardCharsets.US_ASCII);
			ex.sendResponseHeaders(200, body.length);
			try (OutputStream os = ex.getResponseBody()) {
				os.write(body);
			}
		});
		s.setExecutor(Executors.newFixedThreadPool(4));
		s.start();
		String port = Integer.toString(s.getAddress().getPort());
		Files.write(Paths.get(args[0] + ".tmp"), port.getBytes(StandardCharsets.US_ASCII));
		Files.move(Paths.get(args[0] + ".tmp"), Paths.get(args[0]));
	}
}
