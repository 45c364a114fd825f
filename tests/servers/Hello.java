// Hello - a small Java program for tests/runtimes: some allocation,
// string work and a few threads, lines on stdout and stderr, and an exit
// status of its own (7), so that a traced run can be compared byte for
// byte with an untraced one.
import java.util.ArrayList;
import java.util.List;

public class Hello {
	public static void main(String[] args) throws Exception {
		List<Thread> ts = new ArrayList<>();
		long[] sums = new long[4];
		for (int t = 0; t < 4; t++) {
			final int k = t;
			Thread th = new Thread(() -> {
				StringBuilder sb = new StringBuilder();
				for (int i = 0; i < 20000; i++) {
					sb.setLength(0);
					sb.append(i * (k + 1));
					sums[k] += sb.toString().hashCode() & 0xff;
				}
			});
			th.start();
			ts.add(th);
		}
		for (Thread th : ts)
			th.join();
		for (int t = 0; t < 4; t++)
			System.out.println("thread " + t + " sum " + sums[t]);
		System.err.println("to stderr");
		System.exit(7);
	}
}
