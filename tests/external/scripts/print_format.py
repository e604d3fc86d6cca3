"""Prints five steps of progress the way one trainer does (hf, tqdm, kohya, lightning, regex),
for tests/external/supervise_test.sh: `supervise --parser FORMAT` must read loss 2.5 … 2.1.
Standard library only; the lines are the formats' own (tqdm bars end in '\r')."""
import sys

fmt = sys.argv[1]
losses = [2.5, 2.4, 2.3, 2.2, 2.1]
for i, loss in enumerate(losses, start=1):
    if fmt == "hf":
        bar = " %3d%%|%-10s| %d/5 [00:0%d<00:0%d,  1.00it/s]" % (i * 20, "#" * (2 * i), i, i, 5 - i)
        sys.stdout.write(bar + "\r")
        print("{'loss': %s, 'grad_norm': 1.25, 'learning_rate': 4.5e-05, 'epoch': %.2f}"
              % (loss, i / 5))
    elif fmt == "tqdm":
        sys.stdout.write("Training: %3d%%|%-10s| %d/5 [00:0%d<00:0%d,  1.00it/s, loss=%s, lr=1e-4]\r"
                         % (i * 20, "#" * (2 * i), i, i, 5 - i, loss))
    elif fmt == "kohya":
        sys.stdout.write("steps: %3d%%|%-10s| %d/5 [00:0%d<00:0%d,  1.00it/s, avr_loss=%s]\r"
                         % (i * 20, "#" * (2 * i), i, i, 5 - i, loss))
    elif fmt == "lightning":
        # Five batches per epoch is one: epoch 0, batches 1-5.
        sys.stdout.write("Epoch 0: %3d%%|%-10s| %d/5 [00:0%d<00:0%d, 1.00it/s, v_num=0, "
                         "train_loss_step=%s]\r" % (i * 20, "#" * (2 * i), i, i, 5 - i, loss))
    elif fmt == "regex":
        print("it %d: objective %s" % (i, loss))
    else:
        sys.exit("unknown format " + fmt)
    sys.stdout.flush()
print("\ndone")
