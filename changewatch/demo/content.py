"""The text of the demo site: a small cycling club's website, before and after a week of edits.

Each page is a title and an HTML body fragment; :mod:`changewatch.demo.site` wraps them in the
chrome every page shares (head, navigation, newsletter form, footer) and the per-render noise.
"""

from __future__ import annotations

__all__ = ["EDIT_NEW", "EDIT_OLD", "NEWS_ADDED", "PAGES", "RIDES_REWRITTEN"]

#: path → (title, body); the site as first crawled.
PAGES: dict[str, tuple[str, str]] = {}

PAGES["/"] = (
    "Riverside Cycling Club",
    """
<h1>Riverside Cycling Club</h1>
<p>We are a friendly, volunteer-run cycling club based at the old boathouse on Mill Lane.
Every week we lead rides for all abilities, from gentle café rides along the towpath to fast
chain-gang sessions on the ring road. New riders are always welcome: come along to any
Saturday social ride, no membership needed for your first three rides.</p>
<h2>Latest news</h2>
<ul class="news">
%NEWS%
</ul>
<h2>Where to start</h2>
<p>If you are new to group riding, read our <a href="/guides/maintenance.html">basic
maintenance guide</a> before your first ride and check the <a href="/rides.html">weekly
ride programme</a>. Our <a href="/guides/routes.html">route planning guide</a> explains how
we grade rides and how to follow a route on your phone or bike computer.</p>
<p>Questions? Our ride leaders are happy to help: see the <a href="/contact.html">contact
page</a>, or just turn up ten minutes before a ride starts and say hello.</p>
""",
)

NEWS_SPRING = (
    '<li><a href="/news/spring-reliability-ride.html">Spring reliability ride: 84 riders, '
    "three routes, one very muddy ford</a></li>"
)
NEWS_AUTUMN = (
    '<li><a href="/news/autumn-audax.html">Entries open for the Autumn Audax, '
    "our 200 km calendar event</a></li>"
)

PAGES["/about.html"] = (
    "About the club",
    """
<h1>About the club</h1>
<p>Riverside Cycling Club was founded in 1952 by a group of factory workers who rode out to
the hills every Sunday morning and back in time for lunch. The first club headquarters was
the back room of the Anchor Inn, and the club badge, a blue wheel over three wavy lines, was
designed by the landlord's daughter. Seventy years later we still use the same badge, though
the Anchor has long since become flats.</p>
<h2>What we do</h2>
<p>Most of our activity is simple: we ride bikes together. We run social rides on Saturday
mornings, training rides on Tuesday and Thursday evenings in summer, and a winter programme
of shorter rides and indoor sessions. A handful of members race on the road and in local
time trials, and the club promotes two open events each year: the Spring Reliability Ride in
March and the Autumn Audax in October.</p>
<p>We also do a fair amount that does not involve riding. Members maintain a stretch of the
towpath with the canal trust, run a bike recycling workshop for the food bank on the first
Sunday of the month, and coach children at the primary school's after-school club.</p>
<h2>How the club is run</h2>
<p>The club is a not-for-profit members' association affiliated to the national governing
body. A committee of eight volunteers is elected at the annual general meeting each
November. The committee sets the subscription, approves the ride programme, looks after the
club's insurance and keeps the accounts, which are published to members every year.</p>
<p>Ride leaders are volunteers too. Every leader has completed the ride leader course and a
basic first-aid course, and carries a small first-aid kit, a spare tube of each common size
and the club's emergency contact card. Leaders are not mechanics or guides for hire; they
are members who have offered to set a pace, choose a route and make sure nobody is left
behind.</p>
<h2>Our values</h2>
<p>We want cycling to be open to everyone. We welcome riders of every age, background and
ability, on any kind of bike. We ride considerately on roads and shared paths, we wait at
the top of every climb, and we never drop a rider on a social ride. If something about the
club falls short of that, please tell a committee member: we would much rather hear about it
than lose a rider.</p>
<p>Read about <a href="/membership.html">membership</a> or come on a ride first: the
<a href="/rides.html">ride programme</a> lists every ride with its start point and pace.</p>
""",
)

PAGES["/rides.html"] = (
    "Weekly rides",
    """
<h1>Weekly rides: summer programme</h1>
<p>Our summer programme runs from the first weekend of April until the clocks go back at the
end of October. All rides start from the boathouse car park on Mill Lane unless stated.</p>
<h2>Saturday social ride</h2>
<p>Saturday, 9:00. Around 50 km at a relaxed 20 to 22 km/h with a café stop at halfway. The
group is split into two or three smaller groups of no more than twelve riders, each with its
own leader and back marker. This is the best ride for newcomers.</p>
<h2>Sunday club run</h2>
<p>Sunday, 8:30. Between 80 and 110 km through the hills at 25 to 28 km/h, regrouping at the
top of each climb. Riders should be comfortable riding for four hours and able to fix a
puncture on their own.</p>
<h2>Tuesday chain gang</h2>
<p>Tuesday, 18:30. A fast, chaingang-style training ride on the ring road loop, around 40 km.
Through-and-off riding in a double line. Experienced group riders only; mudguards are not
required in summer but lights are required from September.</p>
<h2>Thursday hill repeats</h2>
<p>Thursday, 18:30. Repeats of Beacon Hill with a short recovery loop, around 30 km in all.
Riders go at their own pace on the climb and regroup at the bottom.</p>
<h2>Before you ride</h2>
<p>Bring a spare tube, tyre levers, a pump, water, some food and a charged phone. Helmets are
compulsory on club rides. Check the ride page on the morning of the ride in case of weather
cancellations.</p>
""",
)

#: The rides page after the switch to the winter programme: a rewrite.
RIDES_REWRITTEN = (
    "Weekly rides",
    """
<h1>Winter programme: November to March</h1>
<p>With short days and cold, wet roads, the club winter season swaps long hill rides for
shorter loops, an indoor turbo league and a monthly gravel outing. Mudguards are compulsory
on every winter ride: the rider behind you will thank you.</p>
<h2>Saturday coffee loop</h2>
<p>Saturdays at ten. A flat 35 km loop out to the reservoir café and back along the canal.
Steady pace, usually 18 km/h, nobody dropped. Please bring lights even in daylight.</p>
<h2>Indoor turbo league</h2>
<p>Wednesday evenings in the church hall. Bring your own bike and trainer or book one of the
club's four smart trainers. Six-week blocks of structured sessions, with a points table for
anyone who wants one and tea and biscuits for everyone.</p>
<h2>Gravel Sunday</h2>
<p>First Sunday of each month. Forest tracks and bridleways north of the ridge, 40 to 60 km.
Tyres of 35 mm or wider recommended. Expect mud, punctures and a pub lunch.</p>
<h2>Cancellations</h2>
<p>Rides on icy roads are cancelled by seven on the morning of the ride. Cancellations are
posted on this page and in the members' group chat.</p>
""",
)

PAGES["/guides/maintenance.html"] = (
    "Basic bike maintenance",
    """
<h1>Basic bike maintenance for club rides</h1>
<p>A well-kept bike is safer, faster and far less likely to leave you stranded at the side
of a country lane. You do not need a workshop or expensive tools to look after a bike: ten
minutes a week and a small set of tools will prevent most of the mechanical problems we see
on club rides. This guide covers the checks we ask every rider to make before joining a
group ride, and the basic jobs every cyclist should be able to do at home.</p>
<h2>The pre-ride check</h2>
<p>Before every ride, work through the bike from front to back. Squeeze both brake levers
firmly: they should stop well before touching the handlebar, and the bike should not roll
when you push it forward with the front brake on. Lift each end of the bike and spin the
wheel: it should run straight, without rubbing on the brake pads or the frame. Check that
the quick-release levers or thru-axles are closed tightly.</p>
<p>Look at your tyres for cuts, bulges and embedded flints or glass. Pick out anything sharp
with a small screwdriver, and replace a tyre if you can see the threads of the casing.
Check your tyre pressure every week with a track pump that has a gauge: most punctures on
club rides come from tyres that are too soft, which pinch the tube on potholes.</p>
<p>Finally, lift the back of the bike and turn the pedals. The chain should run quietly
through every gear without jumping, and the gear changes should be crisp. If the chain
squeaks, it needs lubricating; if it skips, it may be worn or the gears may need adjusting.</p>
<h2>Cleaning and lubricating the chain</h2>
<p>A clean chain lasts longer and makes your gears shift better. After a wet or muddy ride,
wipe the chain with a rag while turning the pedals backwards. Every few weeks, or whenever
the chain looks black and gritty, clean it properly with a chain cleaning tool or a brush
and a bike-specific degreaser, rinse it with water and let it dry.</p>
<p>Apply lubricant to the inside of the chain, one drop on each roller, while slowly
turning the pedals backwards. Let it soak in for a few minutes, then wipe off the excess
with a clean rag: lubricant on the outside of the chain only attracts dirt. Use a wet
lubricant in winter and a dry or wax-based one in summer.</p>
<h2>Fixing a puncture</h2>
<p>Everyone riding with the club should be able to fix a puncture at the roadside. Carry a
spare inner tube of the right size and valve type, two tyre levers and a mini pump or a
carbon dioxide inflator. A patch kit is a good backup for a second puncture.</p>
<p>Remove the wheel, let out any remaining air and push the tyre bead into the centre of the
rim all the way round; this gives you the slack you need. Lever one side of the tyre off
the rim, pull out the old tube and run your fingers carefully round the inside of the tyre
to find whatever caused the puncture. If you skip this step, the same thorn will puncture
your new tube a mile down the road.</p>
<p>Put a little air in the new tube so that it holds its shape, fit the valve through the
rim, and tuck the tube into the tyre. Work the bead back onto the rim with your thumbs,
starting at the valve and finishing opposite it. Avoid using tyre levers to refit the tyre
if you can, as they easily pinch the new tube. Inflate to your usual pressure, check that
the tyre sits evenly on the rim, and refit the wheel.</p>
<h2>Brakes</h2>
<p>Rim brake pads wear quickly in wet and gritty conditions. Look at the pads every couple
of weeks: when the grooves are nearly gone, replace them. Pick any shards of metal out of
the pads with a small pick, and clean the rims with a damp cloth.</p>
<p>Disc brakes need less regular attention, but keep oil and lubricant well away from the
rotors and pads. If your disc brakes suddenly become noisy or weak after cleaning the bike,
the pads may be contaminated, and they will need replacing. Hydraulic brakes that feel
spongy need bleeding, which is a job for a bike shop if you have not done it before.</p>
<h2>Wear and tear</h2>
<p>Chains stretch as they wear, and a worn chain quickly wears the cassette and chainrings.
A chain checker tool costs less than a café stop and tells you when to replace the chain;
as a rule of thumb, a road chain lasts around 3,000 to 5,000 km. Cables stretch and fray,
bar tape wears through, and bottom brackets and headsets develop play. None of these are
urgent, but all of them are easier to fix in the garage than on a wet hillside.</p>
<h2>When to see a mechanic</h2>
<p>Some jobs need specialist tools or experience: wheel truing, suspension servicing,
hydraulic brake bleeding and anything involving the bottom bracket. Members get a discount
at both bike shops in town, and the club's workshop night on the first Sunday of the month
is a good place to learn with help from experienced members.</p>
""",
)

#: The one-sentence edit made to the maintenance guide ("with" becomes "using").
EDIT_OLD = "Check your tyre pressure every week with a track pump that has a gauge"
EDIT_NEW = "Check your tyre pressure every week using a track pump that has a gauge"

PAGES["/guides/routes.html"] = (
    "Route planning",
    """
<h1>Route planning and ride grades</h1>
<p>Every club ride has a published route and a grade. This page explains how we grade rides,
where to find the routes, and how to follow them.</p>
<h2>Ride grades</h2>
<p>Grades describe the pace of the group on flat roads and the amount of climbing, not the
fitness of the riders. <strong>Grade A</strong> rides average over 28 km/h and may include
long climbs. <strong>Grade B</strong> rides average 24 to 28 km/h with regroups after every
major climb. <strong>Grade C</strong> rides average 20 to 24 km/h, and <strong>social
rides</strong> go at the pace of the slowest rider with a café stop.</p>
<p>If you are unsure which group to join, start with a slower one. It is easy to move up a
group next week, and a lot less fun to spend three hours hanging on at the back.</p>
<h2>Finding and following routes</h2>
<p>Routes are published on the club's route library a week before the ride, as GPX files
and as links you can open in the common route planning apps. Download the route to your
device before the ride: mobile signal in the hills is unreliable.</p>
<p>The ride leader always has the route, so you do not strictly need one yourself. But if
you get separated from the group, a route on your device means you can carry on to the next
regroup point or find the quickest way home.</p>
<h2>Planning your own routes</h2>
<p>When you plan a ride for the club, prefer quiet lanes over main roads, avoid right turns
across fast traffic, and put regroup points at the top of climbs and before junctions.
Choose a café that can cope with twenty cyclists arriving at once, and ring ahead.</p>
""",
)

PAGES["/membership.html"] = (
    "Membership",
    """
<h1>Membership</h1>
<p>You are welcome to join three club rides before deciding whether to become a member.
After that, we ask riders to join the club so that they are covered by the club's
third-party insurance and can vote at the annual general meeting.</p>
<h2>Subscriptions</h2>
<ul>
<li>Adult membership: £30 a year.</li>
<li>Concession (students, unwaged, over 65): £15 a year.</li>
<li>Family membership (two adults and their children under 18): £50 a year.</li>
<li>Junior membership (under 18, riding with a parent or guardian): free.</li>
</ul>
<p>The membership year runs from the first of January. Riders who join after the first of
October pay half the annual subscription and are members until the end of the following
year.</p>
<h2>What membership includes</h2>
<p>Members receive third-party liability insurance on club rides, discounts at local bike
shops, access to the club's workshop nights and indoor trainers, entry to club time trials
and reduced entry fees for our open events. Members can also buy club kit.</p>
<h2>How to join</h2>
<p>Fill in the form at any Saturday ride, or print the <a href="/print/membership.html">
printable version of this page</a> and post it to the membership secretary at the address on
the <a href="/contact.html">contact page</a>.</p>
""",
)

PAGES["/contact.html"] = (
    "Contact us",
    """
<h1>Contact us</h1>
<p>The quickest way to reach us is to come to a Saturday ride. Otherwise, the committee
members below are happy to answer questions by email.</p>
<ul>
<li>General enquiries and new riders: the club secretary.</li>
<li>Membership and subscriptions: the membership secretary.</li>
<li>Rides and routes: the ride coordinator.</li>
<li>Open events, entries and volunteers: the events secretary.</li>
</ul>
<p>Post: Riverside Cycling Club, The Boathouse, Mill Lane. We do not have staffed opening
hours, so please do not send anything that needs a signature.</p>
<p>To report a problem on a club ride, such as a collision, a near miss or an injury, please
tell the ride leader on the day and email the club secretary within a week, so that the
committee can follow it up and, where needed, inform the club's insurer.</p>
""",
)

PAGES["/news/spring-reliability-ride.html"] = (
    "Spring reliability ride report",
    """
<h1>Spring reliability ride: 84 riders and one very muddy ford</h1>
<p>Eighty-four riders started this year's Spring Reliability Ride, our biggest field for a
decade, on a cold but dry March morning. Riders chose between the 50, 100 and 150 km routes,
all starting and finishing at the boathouse.</p>
<p>The ford at Lower Marsh was deeper than anyone expected after a week of rain, and most
riders sensibly walked across on the footbridge. Those who did not will be cleaning their
bottom brackets for some time. Thanks to the volunteers at the village hall checkpoint, who
served more than two hundred cups of tea and a remarkable quantity of flapjack.</p>
<p>Every rider who finished inside the time limit receives a club reliability card. The
fastest rider on the long route finished in just under five hours; the last riders home, on
a tandem, finished with twelve minutes to spare and the biggest cheer of the day.</p>
""",
)

#: The news item added before the second crawl.
NEWS_ADDED = (
    "/news/autumn-audax.html",
    "Autumn Audax entries open",
    """
<h1>Entries open for the Autumn Audax</h1>
<p>Entries are now open for the club's Autumn Audax, a 200 km calendar event through the
hills to the coast and back on the second Saturday of October. The route follows quiet
lanes almost all the way, with controls at the harbour café, the old station tea room and
the village hall at Upper Weston.</p>
<p>Audax rides are not races. Riders carry a brevet card, collect a stamp or a receipt at
each control and must finish between the minimum and maximum times. Riders need to be
self-sufficient: carry food, water, lights, a spare tube and the tools to fix your bike.</p>
<p>Entries are limited to 150 riders. Club members receive a discount, and volunteers for
the controls are very welcome: a free entry to any club event is offered to everyone who
helps out on the day.</p>
""",
)
